import * as z from "zod/mini";
import { filterActionKind } from "../core/destination/filters.js";
import { compileFql } from "../core/destination/fql.js";

/** `if`: FQL that compiles to what @segment/tsub evaluates, or "all" (every event: see matcherOf in core/destination/filters.ts). */
const condition = z.string().check(
  z.superRefine((text, ctx) => {
    if (text.trim() === "all") return;
    const compiled = compileFql(text);
    if (!compiled.ok) ctx.addIssue({ code: "custom", message: `not FQL that wh can run: ${compiled.error}` });
  }),
);

/** Object path ("" the top level) → the keys to drop or allow there, as the Public API's `fields`. */
const fields = z.record(z.string(), z.array(z.string()));

const ACTION_TYPES = "DROP, SAMPLE, DROP_PROPERTIES or ALLOW_PROPERTIES (or as tsub spells them: drop, sample_event, drop_properties, allow_properties)";

/** One action: each kind with what it needs, and nothing another kind takes. */
const actionSchema = z
  .strictObject({
    type: z.string(),
    fields: z.optional(fields),
    percent: z.optional(z.number().check(z.minimum(0, "must be between 0 and 1"), z.maximum(1, "must be between 0 and 1"))),
    path: z.optional(z.string()),
  })
  .check(
    z.superRefine((action, ctx) => {
      const kind = filterActionKind(action.type);
      if (kind === undefined) {
        ctx.addIssue({ code: "custom", path: ["type"], message: `${JSON.stringify(action.type)} is not a filter action: use ${ACTION_TYPES}` });
        return;
      }
      const needs = kind === "sample" ? ["percent"] : kind === "drop" ? [] : ["fields"];
      const takes = kind === "sample" ? ["percent", "path"] : needs;
      for (const key of needs)
        if (action[key as keyof typeof action] === undefined) ctx.addIssue({ code: "custom", path: [key], message: `a ${action.type} action needs ${key}` });
      for (const key of ["fields", "percent", "path"])
        if (!takes.includes(key) && action[key as keyof typeof action] !== undefined)
          ctx.addIssue({ code: "custom", path: [key], message: `a ${action.type} action takes no ${key}` });
    }),
  );

/**
 * Destination filters as Segment's Public API returns them (DestinationFilterV1): the fields wh
 * acts on, and those it reads past (ids, description, times), so a filter can be pasted as it comes.
 */
export const filtersSchema = z.array(
  z.strictObject({
    if: condition,
    actions: z.array(actionSchema).check(z.minLength(1, "a filter needs at least one action")),
    enabled: z.optional(z.boolean()),
    title: z.optional(z.string()),
    description: z.optional(z.string()),
    id: z.optional(z.string()),
    sourceId: z.optional(z.string()),
    destinationId: z.optional(z.string()),
    createdAt: z.optional(z.string()),
    updatedAt: z.optional(z.string()),
  }),
);
