import { spawnSync } from "node:child_process";
import { tracked } from "../helpers/children.js";
import { REDIS_CLI, REDIS_SERVER, startCluster as startNodes, type TestCluster } from "./redis-servers.mjs";

/**
 * A real Redis Cluster on loopback for the tests (redis-servers.mjs, shared with the
 * benchmarks). Skipped with one line where redis-server or redis-cli cannot run (a failure under
 * WH_REQUIRE_SERVICES=1), as in redis-server.ts.
 */
export const clusterAvailable = spawnSync(REDIS_SERVER, ["--version"]).status === 0 && spawnSync(REDIS_CLI, ["--version"]).status === 0;
if (!clusterAvailable && process.env.WH_REQUIRE_SERVICES === "1")
  throw new Error(`WH_REQUIRE_SERVICES=1 but ${REDIS_SERVER} or ${REDIS_CLI} cannot be run (apt-get install redis-server redis-tools)`);
if (!clusterAvailable)
  process.stderr.write(`Redis Cluster tests skipped: ${REDIS_SERVER} or ${REDIS_CLI} cannot be run here (apt-get install redis-server redis-tools)\n`);

export { cli, type ClusterNode, type TestCluster } from "./redis-servers.mjs";

/** The cluster, each node registered for cleanup (test/helpers/children.ts): a test that times out leaves none running. */
export const startCluster = (nodeTimeoutMs?: number): Promise<TestCluster> => startNodes(nodeTimeoutMs, tracked);
