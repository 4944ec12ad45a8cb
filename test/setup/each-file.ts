import { afterAll, inject } from "vitest";
import { killTracked, killTrackedOnExit, RUN_MARK } from "../helpers/children.js";

// Before each test file (vitest's setupFiles): the children it spawns carry this run's mark, and
// those still running when it ends are killed, however its tests ended (and when the worker
// itself is stopped).
process.env[RUN_MARK] = inject("testRun");
afterAll(killTracked);
killTrackedOnExit();
