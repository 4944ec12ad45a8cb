import { MAX_JSON_DEPTH } from "./parse-json.js";
import { formatPath } from "./schema.js";

/**
 * Why a value from code (not parsed from JSON text) cannot be a message's JSON, with the path to
 * the culprit: a circular reference, a BigInt, or nesting deeper than MAX_JSON_DEPTH; undefined
 * when JSON.stringify can serialise it. Asked only once JSON.stringify has thrown: what it says
 * (a TypeError, a stack overflow) names neither the field nor the rule.
 */
export function jsonDataProblem(value: unknown): string | undefined {
  return problemAt(value, [], new Set());
}

function problemAt(value: unknown, path: (string | number)[], open: Set<object>): string | undefined {
  const at = (problem: string): string => (path.length === 0 ? problem : `${formatPath(path)}: ${problem}`);
  if (typeof value === "bigint") return at("a BigInt, which JSON cannot hold (give a number or a string)");
  if (typeof value !== "object" || value === null || typeof (value as { toJSON?: unknown }).toJSON === "function") return undefined;
  if (open.has(value)) return at("a circular reference (an object that contains itself cannot be sent as JSON)");
  if (path.length >= MAX_JSON_DEPTH) return `${formatPath(path.slice(0, 2))}: nested deeper than ${MAX_JSON_DEPTH} levels`;
  open.add(value);
  const isArray = Array.isArray(value);
  for (const [key, item] of Object.entries(value)) {
    const problem = problemAt(item, [...path, isArray ? Number(key) : key], open);
    if (problem !== undefined) return problem;
  }
  open.delete(value);
  return undefined;
}

/**
 * `make()`, or `refuse(why)` when it threw because `value` is not JSON data (a message built in
 * code: a value parsed from JSON text always is). Any other error is thrown as it was.
 */
export function unlessNotJsonData<T>(value: unknown, make: () => T, refuse: (problem: string) => T): T {
  try {
    return make();
  } catch (error) {
    const problem = jsonDataProblem(value);
    if (problem === undefined) throw error;
    return refuse(problem);
  }
}
