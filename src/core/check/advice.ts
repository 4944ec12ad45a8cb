/** What wh check tells a receiver that verifies otherwise than Segment signs: the risk, and what to verify instead. */

/** Why verifying JSON.stringify(req.body) passes with Segment and what it risks (the unicode-escaped case's advisory). */
export const REPARSED =
  "the same event as JSON.stringify writes it: your receiver verifies JSON.stringify(req.body), not the raw bytes it received. That holds with Segment, whose bodies are JSON.stringify's own bytes; the risk: a body written or re-encoded by anything else (a proxy or relay on the way, a sender in another language) fails verification, and a 4xx is not retried: the event is lost. Verify the raw request body";

/** Why a raw-bytes receiver refuses an Actions batch, and what to verify instead (the batch case's failure). */
export const WHOLE_BATCH =
  "the same batch signed over its whole body: your receiver verifies the whole body, but an Actions batch is signed over its first event only (X-Signature is the HMAC-SHA1 of JSON.stringify of the first event, as action-destinations' webhook signs payload[0].data). When the body is a JSON array, verify JSON.stringify(JSON.parse(rawBody)[0]); the other events are covered by no signature";
