import { describe, expect, it } from "vitest";
import { typeMessage } from "../../src/core/check/cases.js";
import { buildIngestMessage } from "../../src/core/message/ingest-message.js";
import { prepareMessage } from "../../src/core/message/prepare.js";
import { normalizeTimestamp } from "../../src/core/message/timestamp.js";
import { findSample, SAMPLE_NAMES, SAMPLES } from "../../src/core/samples/catalogue.js";
import { PRODUCT_FIELDS } from "../../src/core/samples/ecommerce.js";
import { SeededRandom } from "../../src/core/samples/random.js";
import { generateTraffic, type TrafficOptions } from "../../src/core/samples/traffic.js";
import type { FieldType, SpecFields } from "../../src/core/samples/types.js";

// The catalogue against wh's own message rules and the Spec's property types; the generated
// traffic against the same, plus its order and its seed.

const STAMPS = { now: () => new Date("2026-11-21T09:30:08.276Z"), newId: () => "id-1" };
const LIBRARY = { name: "wh", version: "test" };

function typeOf(value: unknown): FieldType[] {
  if (Array.isArray(value)) return ["array"];
  if (value !== null && typeof value === "object") return ["object"];
  if (typeof value === "number") return Number.isInteger(value) ? ["integer", "number"] : ["number"];
  if (typeof value === "boolean") return ["boolean"];
  if (typeof value === "string") return normalizeTimestamp(value) === undefined ? ["string"] : ["date", "string"];
  return [];
}

/** Each field that breaks the Spec's types: an unknown name, a value of another type, a product of the wrong shape. */
function typeProblems(values: Record<string, unknown>, fields: SpecFields, where: string): string[] {
  return Object.entries(values).flatMap(([key, value]) => {
    const expected = fields[key];
    if (expected === undefined) return [`${where}.${key}: not a field the Spec documents here`];
    if (!typeOf(value).includes(expected)) return [`${where}.${key}: ${JSON.stringify(value)} is not a ${expected}`];
    if (key !== "products") return [];
    return (value as Record<string, unknown>[]).flatMap((product, index) => typeProblems(product, PRODUCT_FIELDS, `${where}.products[${index}]`));
  });
}

function filled(message: Record<string, unknown>): Record<string, unknown> {
  return (message.type === "identify" || message.type === "group" ? message.traits : message.properties) as Record<string, unknown>;
}

/** What must hold of every message wh makes: valid for send/replay in both modes, and for ingest. */
function validate(message: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const mode of ["classic", "actions"] as const) {
    const prepared = prepareMessage(message, STAMPS, { mode });
    if (!prepared.ok) problems.push(`${mode}: ${prepared.error}`);
  }
  const ingest = buildIngestMessage(message, STAMPS, LIBRARY);
  if (!ingest.ok) problems.push(`ingest: ${JSON.stringify(ingest)}`);
  return problems;
}

describe("the catalogue of Segment's Spec events", () => {
  it("has the Spec's events of each part, each name once", () => {
    expect(new Set(SAMPLE_NAMES).size).toBe(SAMPLE_NAMES.length);
    const required = [
      ...["Products Searched", "Product List Viewed", "Product Viewed", "Product Added", "Product Removed", "Cart Viewed", "Checkout Started"],
      ...["Checkout Step Viewed", "Checkout Step Completed", "Payment Info Entered", "Order Completed", "Order Refunded", "Coupon Applied"],
      ...["Signed Up", "Signed In", "Account Created", "Trial Started", "Invite Sent"],
      ...["Video Playback Started", "Video Content Playing", "Video Ad Started", "Video Playback Completed"],
      ...["Application Installed", "Application Opened", "Application Backgrounded", "Application Updated"],
      ...["Identify", "Group", "Page", "Screen", "Alias"],
    ];
    expect(SAMPLE_NAMES).toEqual(expect.arrayContaining(required));
    expect(new Set(SAMPLES.map((sample) => sample.spec))).toEqual(new Set(["ecommerce", "b2b-saas", "video", "mobile", "semantic"]));
  });

  it.each(SAMPLES.map((sample) => [sample.name, sample] as const))("%s is a valid message whose fields have the Spec's types", (_name, sample) => {
    const message = sample.message as Record<string, unknown>;
    expect(message.type).toBe(sample.type);
    expect(validate(message)).toEqual([]);
    expect(typeProblems(filled(message) ?? {}, sample.fields, sample.type === "identify" || sample.type === "group" ? "traits" : "properties")).toEqual([]);
    if (sample.type === "track") expect(message.event).toBe(sample.name);
  });

  it("finds a sample by name in any case", () => {
    expect(findSample("order completed")?.name).toBe("Order Completed");
    expect(findSample(" Signed Up ")?.spec).toBe("b2b-saas");
    expect(findSample("Order Complete")).toBeUndefined();
  });

  it("types a date as the Spec does: an ISO-8601 string", () => {
    expect(typeProblems({ trial_start_date: "next week" }, findSample("Trial Started")?.fields ?? {}, "properties")).toEqual([
      'properties.trial_start_date: "next week" is not a date',
    ]);
  });
});

describe("the seeded random stream", () => {
  it("repeats itself for a seed and differs between seeds", () => {
    const draw = (seed: number) => {
      const random = new SeededRandom(seed);
      return Array.from({ length: 5 }, () => random.next());
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
    for (const value of draw(7)) expect(value >= 0 && value < 1).toBe(true);
    expect(new SeededRandom(1).uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

const OPTIONS: TrafficOptions = { users: 40, events: 4000, seed: 1234, start: Date.parse("2026-11-01T00:00:00Z") };
const traffic = (options: Partial<TrafficOptions> = {}) => [...generateTraffic({ ...OPTIONS, ...options })];

describe("generated traffic", () => {
  it("is the same for the same seed, and another for another seed", () => {
    const lines = traffic().map((message) => JSON.stringify(message));
    expect(lines).toHaveLength(OPTIONS.events);
    expect(traffic().map((message) => JSON.stringify(message))).toEqual(lines);
    expect(traffic({ seed: 1235 }).map((message) => JSON.stringify(message))).not.toEqual(lines);
  });

  it("keeps every user's messages in time order, and the file in time order", () => {
    const messages = traffic();
    const last = new Map<unknown, number>();
    let previous = 0;
    for (const message of messages) {
      const at = Date.parse(message.timestamp as string);
      expect(at).toBeGreaterThanOrEqual(previous);
      previous = at;
      // An alias names the anonymous id it joins as previousId.
      const person = message.anonymousId ?? message.previousId;
      expect(at).toBeGreaterThan(last.get(person) ?? 0);
      last.set(person, at);
    }
    expect(last.size).toBe(OPTIONS.users);
  });

  it("is valid for wh, and each track and call has the catalogue's fields and the Spec's types", () => {
    for (const message of traffic()) {
      expect(validate(message)).toEqual([]);
      const name = message.type === "track" ? (message.event as string) : `${String(message.type).slice(0, 1).toUpperCase()}${String(message.type).slice(1)}`;
      const sample = findSample(name);
      expect(sample, name).toBeDefined();
      const where = message.type === "identify" || message.type === "group" ? "traits" : "properties";
      expect(typeProblems(filled(message) ?? {}, sample?.fields ?? {}, `${name} ${where}`)).toEqual([]);
    }
  });

  it("browses, buys, signs up with an alias from the anonymous id, identifies and groups, at plausible rates", () => {
    const messages = traffic();
    const count = (name: string) => messages.filter((message) => (message.event ?? message.type) === name).length;
    expect(count("page")).toBeGreaterThan(count("Product Viewed"));
    expect(count("Product Viewed")).toBeGreaterThan(count("Product Added"));
    expect(count("Product Added")).toBeGreaterThan(count("Checkout Started"));
    expect(count("Checkout Started")).toBeGreaterThanOrEqual(count("Order Completed"));
    expect(count("Order Completed")).toBeGreaterThan(0);
    expect(count("identify")).toBeGreaterThanOrEqual(count("alias"));
    expect(count("group")).toBeGreaterThan(0);
    expect(count("alias")).toBe(count("Signed Up"));
    // Each alias joins the anonymous id the user browsed with to their new userId; from then on
    // their messages carry both.
    for (const alias of messages.filter((message) => message.type === "alias")) {
      const index = messages.indexOf(alias);
      const before = messages.slice(0, index).filter((message) => message.anonymousId === alias.previousId);
      expect(before.length).toBeGreaterThan(0);
      expect(before.every((message) => message.userId === undefined || message.event === "Signed Up")).toBe(true);
      const after = messages.slice(index + 1).filter((message) => message.anonymousId === alias.previousId);
      expect(after.every((message) => message.userId === alias.userId)).toBe(true);
    }
  });
});

describe("wh check's typed cases", () => {
  it("send the catalogue's identify, track (Order Completed), page, screen, group and alias, as the check's own user", () => {
    const now = new Date("2026-11-21T09:30:08.276Z");
    const settings = {
      mode: "classic",
      secret: "s",
      userAgent: "wh/test",
      batchSize: 3,
      concurrency: 1,
      stamps: { now: () => now, newId: () => "id-1" },
      scheme: "segment",
      nowMs: now.getTime(),
    } as const;
    const names = { identify: "Identify", track: "Order Completed", page: "Page", screen: "Screen", group: "Group", alias: "Alias" } as const;
    for (const [type, name] of Object.entries(names)) {
      const body = JSON.parse(typeMessage(type as keyof typeof names, settings).body) as Record<string, unknown>;
      const sample = findSample(name)?.message as Record<string, unknown>;
      expect(body.userId ?? body["User ID"]).toBe("wh-check-user-1");
      for (const field of ["properties", "traits", "groupId", "event", "name"])
        if (sample[field] !== undefined) expect(body[field], `${type} ${field}`).toEqual(sample[field]);
    }
  });
});
