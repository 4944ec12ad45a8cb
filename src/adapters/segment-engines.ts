import { createRequire } from "node:module";
import type { SegmentEngines } from "../core/destination/engines.js";
import { SEND_FIELDS, type SendPayload } from "../core/destination/send-action.js";

// Segment's packages, loaded only when subscriptions (or wh listen's --filter, --route) are
// configured: @segment/actions-core alone takes about 30 ms to load (ajv, liquidjs), which `wh
// sign`, `wh verify`, a plain `wh send` and a plain `wh listen` never pay. Required from node_modules (their CommonJS builds: the ES module builds are not
// loadable by Node), never bundled into the CLI (scripts/bundle-cli.mjs keeps @segment/* external).
const requireInstalled = createRequire(import.meta.url);

interface ActionModule {
  Action: new (
    destinationName: string,
    definition: { title: string; fields: unknown; perform: (request: unknown, data: { payload: unknown }) => unknown },
  ) => { execute(bundle: Record<string, unknown>): Promise<{ data?: unknown }[]> };
}
interface SubscriptionsModule {
  parseFql(fql: string): { error?: Error };
  validate(ast: unknown, event: unknown): boolean;
}
type ValidateMapping = (mapping: unknown) => void;

let loaded: SegmentEngines | undefined;
let loadedFql: Pick<SegmentEngines, "compileTrigger"> | undefined;

/** Segment's FQL engine alone (@segment/destination-subscriptions): `wh listen --filter` needs no mapping-kit. */
export function loadFqlEngine(): Pick<SegmentEngines, "compileTrigger"> {
  loadedFql ??= makeFqlEngine();
  return loadedFql;
}

function makeFqlEngine(): Pick<SegmentEngines, "compileTrigger"> {
  const fql = requireInstalled("@segment/destination-subscriptions") as SubscriptionsModule;
  return {
    compileTrigger(text) {
      const ast = fql.parseFql(text);
      // FQL's parser says what it expected ("Value token is missing"), or fails on what it cannot read at all (a TypeError of its own code).
      if (ast.error !== undefined) return { ok: false, error: ast.error instanceof TypeError ? "unreadable" : ast.error.message };
      return { ok: true, matches: (event) => fql.validate(ast, event) };
    },
  };
}

/** Segment's FQL and mapping-kit engines (see core/destination/engines.ts), loaded once. */
export function loadSegmentEngines(): SegmentEngines {
  loaded ??= makeEngines();
  return loaded;
}

function makeEngines(): SegmentEngines {
  const { Action } = requireInstalled("@segment/actions-core/destination-kit/action") as ActionModule;
  const validateMapping = (requireInstalled("@segment/actions-core/mapping-kit/validate") as { default: ValidateMapping }).default;
  // The Send action run by actions-core's own Action: transform, removeEmptyValues and the schema
  // check are Segment's; perform hands back the payload instead of making the request.
  const send = new Action("Webhook", { title: "Send", fields: SEND_FIELDS, perform: (_request, { payload }) => payload });
  return {
    ...loadFqlEngine(),
    mappingProblems(mapping) {
      try {
        validateMapping(mapping);
        return [];
      } catch (error) {
        // An AggregateError of ValidationErrors when there are several, one ValidationError else.
        const errors = Symbol.iterator in Object(error) ? [...(error as Iterable<unknown>)] : [error];
        return errors.map((each) => (each instanceof Error ? each.message : String(each)));
      }
    },
    async mapEvent(mapping, event) {
      try {
        const results = await send.execute({ mapping, data: event, settings: {}, statsContext: {}, logger: {} });
        return { ok: true, payload: results[results.length - 1]?.data as SendPayload };
      } catch (error) {
        return { ok: false, error: error instanceof Error ? error.message : String(error) };
      }
    },
  };
}
