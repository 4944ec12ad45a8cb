import { withTargetHeaders } from "../request-headers.js";
import { describeUnmapped, planRequests, routeEvent, type SubscriptionRequest } from "../destination/route.js";
import type { SubscriptionSet } from "../destination/subscriptions.js";
import type { PreparedMessage } from "../message/prepare.js";
import { MESSAGE_TYPES, type MessageType } from "../message/types.js";
import { signedHeaders } from "./signing.js";
import { batchMessages, type BuiltCase, type CheckRequest, type CheckSettings, ids, typeMessage } from "./cases.js";

/**
 * `wh check` with subscriptions: the type cases and the batch case send what the user's
 * subscriptions make of their events (each matching subscription's request: its mapped body,
 * method and headers, signed over the (first) data as the destination signs), all to the URL
 * checked, whatever URL the mappings name: it is that receiver that is checked. The other cases
 * are the Actions destination's whole events, as they are without subscriptions.
 */
export async function routeCases(cases: readonly BuiltCase[], settings: CheckSettings, set: SubscriptionSet): Promise<BuiltCase[]> {
  const batching = new Set(set.subscriptions.filter((subscription) => subscription.batchSize !== undefined).map((subscription) => subscription.name));
  return Promise.all(
    cases.map(async (built) => {
      const name = built.definition.name;
      if (built.skip !== undefined || (name !== "batch" && !isType(name))) return built;
      const messages = isType(name) ? [typeMessage(name, settings)] : batchMessages(settings);
      const routed = await routeRequests(messages, set);
      if (typeof routed === "string") return { ...built, requests: [], skip: routed };
      // The batch case is the batching subscriptions' requests (of the events each one's trigger matches).
      const requests = isType(name) ? routed : routed.filter((request) => batching.has(request.subscription));
      if (requests.length === 0) return { ...built, requests: [], skip: "no subscription batches the events it matches (enable_batching)" };
      return {
        ...built,
        requests: requests.map((request) => checkRequest(request, settings)),
        messageIds: messages.flatMap(ids),
        note: `sent as ${requests.map((request) => `subscription ${JSON.stringify(request.subscription)} maps it (${request.method})`).join("; ")}`,
      };
    }),
  );
}

/** The requests the subscriptions make of these events; why none, when none matches or every mapping fails. */
async function routeRequests(messages: readonly PreparedMessage[], set: SubscriptionSet): Promise<SubscriptionRequest[] | string> {
  const routed = await Promise.all(messages.map((message) => routeEvent(set.subscriptions, JSON.parse(message.body), set.engines)));
  if (routed.every((routes) => routes.length === 0)) return "matched no subscription";
  const unmapped = routed.flat().filter((route) => !route.ok);
  if (unmapped.length > 0) return `a mapping fails for wh check's sample: ${describeUnmapped(unmapped)}`;
  return planRequests(routed);
}

/** The request as the destination sends it: its headers over the request client's, signed over the (first) data. */
function checkRequest(request: SubscriptionRequest, settings: CheckSettings): CheckRequest {
  const signedBy = request.signedText === undefined ? undefined : settings.secret;
  const base = signedHeaders(request.body, { ...settings, secret: signedBy }, request.signedText ?? request.body, request.json);
  return { body: request.body, headers: withTargetHeaders(base, request.headers), method: request.method };
}

function isType(name: string): name is MessageType {
  return (MESSAGE_TYPES as readonly string[]).includes(name);
}
