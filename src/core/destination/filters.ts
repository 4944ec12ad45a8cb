import { compileFql } from "./fql.js";
import { keptBySample } from "./sample.js";

/**
 * One action of a destination filter as Segment's Public API returns it (DestinationFilterActionV1,
 * public-api-sdk-typescript model/destinationFilterActionV1.ts): `type`, and `fields` (object path
 * → keys, "" the top level) for the property actions, `percent` (0 to 1) and `path` for a sample.
 */
export interface FilterActionConfig {
  type: string;
  fields?: Record<string, string[]> | undefined;
  percent?: number | undefined;
  path?: string | undefined;
}

/** A destination filter as the Public API returns it (DestinationFilterV1): `if` in FQL, its actions. */
export interface FilterConfig {
  if: string;
  actions: FilterActionConfig[];
  enabled?: boolean | undefined;
  title?: string | undefined;
}

export type FilterActionKind = "sample" | "drop" | "drop_properties" | "allow_properties";

/**
 * The type as the Public API spells it (DROP, SAMPLE, DROP_PROPERTIES, ALLOW_PROPERTIES), as its
 * docs and @segment/tsub do (drop, sample, sample_event, drop_properties, allow_properties).
 */
export function filterActionKind(type: string): FilterActionKind | undefined {
  const lower = type.toLowerCase();
  if (lower === "sample_event") return "sample";
  return (ACTION_ORDER as readonly string[]).includes(lower) ? (lower as FilterActionKind) : undefined;
}

/** The order Segment applies them in: "Sample, Drop ('Only Sends' are Drops), Drop Properties, Allow Properties" (segment-docs destination-filters.md, Limitations). */
const ACTION_ORDER: readonly FilterActionKind[] = ["sample", "drop", "drop_properties", "allow_properties"];

/** The two functions of @segment/tsub that filters run on, passed in: it is loaded only when filters are configured. */
export interface TsubEngine {
  matches(event: unknown, matcher: { type: string; ir: string }): boolean;
  transform(payload: unknown, transformers: { type: string; config?: unknown }[]): unknown;
}

/** What the filters made of one event: dropped (by the filter titled so), or passed on, its properties perhaps cut. */
export type FilterDecision = { dropped: true; title: string } | { dropped: false; event: Record<string, unknown>; changed: boolean };

/** Filters one event as Segment holds it; never throws for a config that passed the schema. */
export type EventFilter = (event: Record<string, unknown>) => FilterDecision;

interface Step {
  filter: number;
  title: string;
  transformer: { type: string; config?: unknown };
}

/**
 * The enabled filters as one function, or undefined when none is enabled. Each filter's `if` is
 * evaluated once, on the event as it came (so one filter's dropped properties never decide
 * whether another applies); then every action of the filters that matched runs in Segment's
 * order, filters in the order given within each kind, each through tsub's own transform, but a
 * sample on a field (see keptBySample).
 */
export function buildEventFilter(filters: readonly FilterConfig[], tsub: TsubEngine): EventFilter | undefined {
  const enabled = filters.map((filter, index) => ({ filter, index })).filter(({ filter }) => filter.enabled !== false);
  if (enabled.length === 0) return undefined;
  const matchers = new Map(enabled.map(({ filter, index }) => [index, matcherOf(filter.if)]));
  const steps: Step[] = enabled.flatMap(({ filter, index }) =>
    filter.actions.map((action) => ({ filter: index, title: filter.title ?? `filters[${index}]`, transformer: transformerOf(action) })),
  );
  const rank = (step: Step) => ACTION_ORDER.indexOf(filterActionKind(step.transformer.type) ?? "sample");
  steps.sort((a, b) => rank(a) - rank(b));
  return (event) => {
    const matched = new Map([...matchers].map(([index, matcher]) => [index, tsub.matches(event, matcher)]));
    let copy: Record<string, unknown> | undefined;
    for (const step of steps) {
      if (matched.get(step.filter) !== true) continue;
      const cuts = step.transformer.type.endsWith("_properties");
      // tsub cuts properties in place: the caller's event stays as it came.
      if (cuts) copy ??= structuredClone(event);
      if (!runStep(tsub, step, copy ?? event)) return { dropped: true, title: step.title };
    }
    return { dropped: false, event: copy ?? event, changed: copy !== undefined };
  };
}

/** Runs one action on the event; false when it drops the event. A sample on a field is keptBySample's. */
function runStep(tsub: TsubEngine, step: Step, event: Record<string, unknown>): boolean {
  const sample = step.transformer.type === "sample_event" ? (step.transformer.config as { sample: { percent: number; path: string } }).sample : undefined;
  if (sample !== undefined && sample.path !== "") return keptBySample(valueAt(event, sample.path), sample.percent);
  return tsub.transform(event, [step.transformer]) !== null;
}

/** The value at a dot-separated path, as tsub reads it (dlv). */
function valueAt(event: unknown, path: string): unknown {
  let value = event;
  for (const key of path.split(".")) {
    if (value === null || value === undefined) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/**
 * `all` is the condition of a filter on every event, as segment-docs' Public API example writes it
 * (connections/destinations/destination-filters.md, "Remove userId from payload": "if": "all"),
 * and tsub's matcher type "all" (matchers.ts); anything else is FQL.
 */
function matcherOf(condition: string): { type: string; ir: string } {
  if (condition.trim() === "all") return { type: "all", ir: "" };
  const compiled = compileFql(condition);
  if (!compiled.ok) throw new Error(`a filter's condition passed the schema but does not compile: ${compiled.error}`);
  return { type: "fql", ir: JSON.stringify(compiled.ir) };
}

/** A Public API action as tsub's transformer (tsub transformers.ts: drop, sample_event, drop_properties, allow_properties). */
function transformerOf(action: FilterActionConfig): { type: string; config?: unknown } {
  switch (filterActionKind(action.type)) {
    case "drop":
      return { type: "drop" };
    case "sample":
      return { type: "sample_event", config: { sample: { percent: action.percent ?? 0, path: action.path ?? "" } } };
    case "drop_properties":
      return { type: "drop_properties", config: { drop: action.fields ?? {} } };
    case "allow_properties":
      return { type: "allow_properties", config: { allow: action.fields ?? {} } };
    default:
      throw new Error(`a filter action of type ${JSON.stringify(action.type)} passed the schema`);
  }
}
