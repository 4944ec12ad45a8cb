/**
 * wh as a library: build and validate messages, sign and verify bodies, deliver them like the
 * Segment Webhooks destination (createWebhookSender), verify them in an app (the receiver
 * adapters), and send batches with the Analytics client. Importing it changes nothing global.
 */
export { Analytics } from "./library/analytics/analytics.js";
export { AnalyticsError, isDebugEnabled } from "./library/analytics/analytics-options.js";
export type {
  AliasFields,
  Callback,
  CommonFields,
  GroupFields,
  Identity,
  IdentifyFields,
  MessageFields,
  PageFields,
  ScreenFields,
  TrackFields,
} from "./library/analytics/analytics.js";
export type { AnalyticsErrorCode, AnalyticsOptions } from "./library/analytics/analytics-options.js";
export type { AnalyticsEvents, BatchResult, DeliveryFailure, QueuedMessage } from "./library/analytics/batch-sender.js";
export { signBody, verifySignature, verifyBody, SIGNATURE_HEADER } from "./core/sign.js";
export type { VerifyResult, BodyVerdict } from "./core/sign.js";
export { explainMismatch } from "./core/explain-signature.js";
export { prepareMessage, prepareLine } from "./core/message/prepare.js";
export type { DestinationMode, MessageStamps, PrepareOptions, PreparedMessage, PrepareResult } from "./core/message/prepare.js";
export type { SkipKind } from "./core/message/skip.js";
export type { FilterActionConfig, FilterConfig } from "./core/destination/filters.js";
export type { InboundMessage } from "./core/message/schema.js";
export { MESSAGE_TYPES, type MessageType } from "./core/message/types.js";
export { checkRequiredFields, isDestinationEnabled, MAX_MESSAGE_BYTES, DESTINATION_NAME } from "./core/message/rules.js";
export { deliverMessage } from "./core/deliver.js";
export { buildRequestHeaders } from "./core/request-headers.js";
export type { DeliveryEvent, DeliveryOptions, DeliveryReport, HttpTransport, TargetReport, TransportResult, WebhookTarget } from "./core/deliver.js";
export { DEFAULT_RETRY_POLICY, classifyOutcome, decideRetry } from "./core/retry-policy.js";
export type { AttemptOutcome, RetryPolicy } from "./core/retry-policy.js";
export { createUndiciTransport } from "./adapters/undici-transport.js";
export type { UndiciTransportOptions } from "./adapters/undici-transport.js";
export { systemClock } from "./adapters/system-clock.js";
export type { Clock } from "./core/clock.js";
export { startReceiver } from "./adapters/listen-server.js";
export type { Receiver, ReceiverOptions, ReceivedRequest } from "./adapters/listen-server.js";
export type { Untrusted } from "./core/untrusted.js";
export { parseConfig } from "./config/schema.js";
export type { WhConfig } from "./config/schema.js";
export { WhError, UsageError, ConfigError, InputError } from "./core/errors.js";
export { VERSION, USER_AGENT } from "./version.js";
export { createWebhookSender } from "./library/sender/webhook-sender.js";
export type {
  AttemptRecord,
  SendOptions,
  SendReport,
  SubscriptionInput,
  WebhookSender,
  WebhookSenderSettings,
  WebhookUrl,
} from "./library/sender/webhook-sender.js";
export type { SubscriptionDelivery } from "./library/sender/subscription-send.js";
export { verifyRequest, webhookOf } from "./library/receiver/verify-request.js";
export type {
  BatchWebhook,
  RejectReason,
  RequestHeaders,
  RequestVerdict,
  SingleWebhook,
  VerifiedWebhook,
  VerifyRequestInput,
} from "./library/receiver/verify-request.js";
export { DEFAULT_MAX_BODY_BYTES } from "./library/receiver/options.js";
export type { WebhookOptions } from "./library/receiver/options.js";
export type { SigningScheme } from "./core/standard-webhooks.js";
export { expressWebhook, nodeWebhook, verifyNodeRequest } from "./library/receiver/node.js";
export type { ExpressLikeRequest } from "./library/receiver/node.js";
export { honoWebhook, nextWebhook, verifyFetchRequest } from "./library/receiver/fetch.js";
export type { HonoLikeContext } from "./library/receiver/fetch.js";
export { fastifyWebhook, WebhookRejection } from "./library/receiver/fastify.js";
export type { FastifyLikeReply, FastifyLikeRequest } from "./library/receiver/fastify.js";
