import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The README and docs/ link to each other: every relative link must reach a file, and every
// #anchor a heading of the page it names, as GitHub makes its anchors.

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PAGES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/** The page's lines outside fenced code blocks (a `# comment` in a shell block is no heading). */
function prose(text: string): string[] {
  let fenced = false;
  return text.split("\n").filter((line) => {
    if (line.startsWith("```")) fenced = !fenced;
    return !fenced && !line.startsWith("```");
  });
}

/** GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const line of prose(text)) {
    const heading = /^#{1,6} (.+)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** The relative targets of a page's links and images: `[text](target)`, outside code. */
function links(text: string): string[] {
  const targets = [
    ...prose(text)
      .join("\n")
      .replace(/`[^`\n]*`/g, "")
      .matchAll(/\]\(([^)\s]+)\)/g),
  ].map((match) => match[1] ?? "");
  return targets.filter((target) => !/^[a-z]+:/i.test(target));
}

describe("links between the README and docs/", () => {
  it.each(PAGES)("%s: every relative link reaches a file, and its #anchor a heading there", (page) => {
    const text = readFileSync(join(ROOT, page), "utf8");
    const broken: string[] = [];
    for (const target of links(text)) {
      const [path = "", anchor] = target.split("#");
      const file = path === "" ? join(ROOT, page) : join(ROOT, dirname(page), path);
      if (!existsSync(file)) broken.push(`${target}: no file ${relative(ROOT, file)}`);
      else if (anchor !== undefined && file.endsWith(".md") && !anchors(readFileSync(file, "utf8")).has(anchor))
        broken.push(`${target}: no heading #${anchor}`);
    }
    expect(broken).toEqual([]);
  });

  it("makes anchors as GitHub does", () => {
    expect(anchors("# wh\n## Your own destination: subscriptions and mappings\n```sh\n# not one\n```\n## The library's API\n## Tests\n## Tests")).toEqual(
      new Set(["wh", "your-own-destination-subscriptions-and-mappings", "the-librarys-api", "tests", "tests-1"]),
    );
  });
});
