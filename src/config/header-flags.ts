import { UsageError } from "../core/errors.js";

// The --header flags of the delivering commands, and the flag behind a webhook issue: apart from
// resolve.ts, which they would push past its length.

/** `--header 'Name: value'` (repeatable) into a map; names and values are checked with the config's rules. */
export function parseHeaderFlags(values: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const value of values) {
    const colon = value.indexOf(":");
    if (colon <= 0) throw new UsageError(`--header ${JSON.stringify(value)}: expected 'Name: value'`);
    headers[value.slice(0, colon).trim()] = value.slice(colon + 1).trim();
  }
  return headers;
}

/** Names the flag behind a webhook issue: `[2].url: …` came from --url, `[0].headers["X-A"]: …` from --header (the file's were checked when it was read). */
export function flagIssue(issue: string): string {
  if (/^\[\d+\]\.headers/.test(issue)) {
    // `["X-Team"]` shown as `X-Team`: a valid name needs no quotes (an invalid one keeps them).
    return `--header ${issue.replace(/^\[\d+\]\.headers\.?/, "").replace(/^\["([!#$%&'*+\-.^_`|~0-9A-Za-z]+)"\]/, "$1")}`;
  }
  if (/^\[\d+\]\.url/.test(issue)) return `--url ${issue.replace(/^\[\d+\]\.url: /, "")}`;
  return issue.replace(/^\[\d+\]: /, "");
}
