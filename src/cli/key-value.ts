import { parseJson } from "../core/message/parse-json.js";
import { UsageError } from "../core/errors.js";
import { parseJsonOrText } from "../core/json-or-text.js";
import { stripBom } from "../core/text.js";

const UNSAFE_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/**
 * Applies `--prop cart.total=12.5` style pairs to an object: dotted keys make nested objects,
 * values that parse as JSON are JSON (`12.5`, `true`, `{"a":1}`, `"007"`), anything else is a string;
 * so are the values at `stringPaths` (fields the schema holds to be strings) and numbers JSON
 * would change.
 */
export function assignKeyValues(flag: string, pairs: readonly string[], target: Record<string, unknown> = {}, stringPaths: ReadonlySet<string> = new Set()): Record<string, unknown> {
  for (const pair of pairs) {
    const equals = pair.indexOf("=");
    if (equals <= 0) throw new UsageError(`${flag} ${JSON.stringify(pair)}: expected key=value`);
    const path = pair.slice(0, equals).split(".");
    if (path.some((key) => key === "" || UNSAFE_KEYS.has(key))) throw new UsageError(`${flag} ${JSON.stringify(pair)}: invalid key`);
    let node = target;
    for (const key of path.slice(0, -1)) {
      const next = node[key];
      if (typeof next !== "object" || next === null || Array.isArray(next)) node[key] = {};
      node = node[key] as Record<string, unknown>;
    }
    const text = pair.slice(equals + 1);
    node[path[path.length - 1] as string] = stringPaths.has(path.join(".")) ? text : parseJsonOrText(text);
  }
  return target;
}

/** Parses a flag whose value must be a JSON object (`--integrations '{"All":false}'`). */
export function parseJsonObjectFlag(flag: string, text: string): Record<string, unknown> {
  const parsed = parseJson(stripBom(text));
  if (!parsed.ok) throw new UsageError(`${flag}: ${parsed.error}`);
  const value = parsed.value;
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new UsageError(`${flag}: expected a JSON object`);
  return value as Record<string, unknown>;
}
