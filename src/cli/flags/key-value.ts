import { inexactNumberProblem } from "../../core/message/exact-numbers.js";
import { isJsonObject, parseJson } from "../../core/message/parse-json.js";
import { UsageError } from "../../core/errors.js";
import { parseJsonOrText } from "../../core/json-or-text.js";
import { stripBom } from "../../core/text.js";

const UNSAFE_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/**
 * Applies `--prop cart.total=12.5` style pairs to an object: dotted keys make nested objects,
 * values that parse as JSON are JSON (`12.5`, `true`, `{"a":1}`, `"007"`), anything else is a string;
 * so are the values at `stringPaths` (fields the schema holds to be strings) and numbers JSON
 * would change. A pair may replace what `target` held (--data's), but not what an earlier pair
 * set: `a=1` then `a.b=2` would drop `a=1` without a word, so it is a usage error.
 */
export function assignKeyValues(
  flag: string,
  pairs: readonly string[],
  target: Record<string, unknown> = {},
  stringPaths: ReadonlySet<string> = new Set(),
): Record<string, unknown> {
  const earlier = new Map<string, string>();
  for (const pair of pairs) {
    const equals = pair.indexOf("=");
    if (equals <= 0) throw new UsageError(`${flag} ${JSON.stringify(pair)}: expected key=value`);
    const dotted = pair.slice(0, equals);
    const path = dotted.split(".");
    if (path.some((part) => part === "" || UNSAFE_KEYS.has(part))) throw new UsageError(`${flag} ${JSON.stringify(pair)}: invalid key`);
    const clash = [...earlier].find(
      ([other]) => other === dotted || other.startsWith(`${dotted}.`) || (dotted.startsWith(`${other}.`) && overwrites(target, path)),
    );
    if (clash !== undefined)
      throw new UsageError(`${flag} ${JSON.stringify(pair)} conflicts with ${flag} ${JSON.stringify(clash[1])}: one would overwrite the other`);
    earlier.set(dotted, pair);
    let node = target;
    for (const key of path.slice(0, -1)) {
      const next = node[key];
      if (!isJsonObject(next)) node[key] = {};
      node = node[key] as Record<string, unknown>;
    }
    const text = pair.slice(equals + 1);
    node[path[path.length - 1] as string] = stringPaths.has(path.join(".")) ? text : parseJsonOrText(text);
  }
  return target;
}

/** Whether setting `path` would replace a value already there, or one of its parents that is not an object. */
function overwrites(target: Record<string, unknown>, path: readonly string[]): boolean {
  let node: unknown = target;
  for (const key of path) {
    if (!isJsonObject(node)) return true;
    if (!Object.hasOwn(node, key)) return false;
    node = node[key];
  }
  return true;
}

/** Parses a flag whose value must be a JSON object (`--integrations '{"All":false}'`), with numbers JSON.parse holds exactly. */
export function parseJsonObjectFlag(flag: string, text: string): Record<string, unknown> {
  const parsed = parseJson(stripBom(text));
  if (!parsed.ok) throw new UsageError(`${flag}: ${parsed.error}`);
  const inexact = inexactNumberProblem(text);
  if (inexact !== undefined) throw new UsageError(`${flag}: ${inexact}`);
  const value = parsed.value;
  if (!isJsonObject(value)) throw new UsageError(`${flag}: expected a JSON object`);
  return value;
}
