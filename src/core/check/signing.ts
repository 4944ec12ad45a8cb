import { randomBytes } from "node:crypto";
import { attemptSigner, buildRequestHeaders, segmentSecret } from "../request-headers.js";
import { SIGNATURE_HEADER, signBody } from "../sign.js";
import { type SigningScheme, standardHeaders, webhookIdOf } from "../standard-webhooks.js";
import type { CheckRequest } from "./cases.js";

// How wh check signs its requests, by the scheme checked: Segment's X-Signature, or Standard
// Webhooks' three headers, made at the check's own time (what the receiver's tolerance judges).

/** What signing a case takes of its settings. */
export interface SigningSettings {
  scheme: SigningScheme;
  /** Absent: nothing is signed. */
  secret: string | undefined;
  userAgent: string;
  /** Now, in milliseconds: when a Standard Webhooks request says it was sent. */
  nowMs: number;
}

/** A request's headers signed as the destination signs: over `signedText` (a batch's first event) for Segment, the whole body for Standard Webhooks. */
export function signedHeaders(body: string, settings: SigningSettings, signedText = body, json = true): Record<string, string> {
  const { scheme, secret } = settings;
  const headers = buildRequestHeaders(signedText, settings.userAgent, segmentSecret(scheme, secret), json);
  return { ...headers, ...attemptSigner(scheme, secret, body)?.(settings.nowMs) };
}

/**
 * The signature headers of `body` (its id is that of `idOf`) over `text`, made with `secret` at
 * `nowMs`: how the signature cases sign what they tamper with.
 */
export function signatureHeaders(settings: SigningSettings, secret: string, idOf: string, text: string, nowMs = settings.nowMs): Record<string, string> {
  if (settings.scheme !== "standard") return { [SIGNATURE_HEADER]: signBody(secret, text) };
  return standardHeaders(secret, webhookIdOf(idOf), nowMs, text);
}

/** A secret that is not the receiver's, in the scheme's format (a whsec_ secret must still be one). */
export function otherSecret(settings: SigningSettings, secret: string): string {
  return settings.scheme === "standard" ? `whsec_${randomBytes(24).toString("base64")}` : `${secret}-not`;
}

/** The request Segment would send: signed (when there is a secret) over `signedText`, the body unless a batch. */
export function signed(body: string, settings: SigningSettings, signedText = body): CheckRequest {
  return { body, headers: signedHeaders(body, settings, signedText) };
}

/** Signs `text` with `secret` by the scheme, under the track's own webhook-id. */
type Sign = (secret: string, text: string) => Record<string, string>;

/** What a signature case makes of a signed track's body: the body sent and its signature headers. */
export type Tampering = (body: string, sign: Sign, secret: string) => { body: string; headers: Record<string, string> };

/** A track's request with its body or signature tampered with (only built with a secret). */
export function tamperedRequest(settings: SigningSettings, original: string, change: Tampering): CheckRequest {
  const sign: Sign = (secret, text) => signatureHeaders(settings, secret, original, text);
  const { body, headers } = change(original, sign, settings.secret as string);
  return { body, headers: { ...signedHeaders(body, { ...settings, secret: undefined }), ...headers } };
}
