import { isUtf8 } from "node:buffer";

/** Why bytes are refused as text. Decoding them anyway would send U+FFFD in their place, and sign it. */
export const NOT_UTF8 = "not valid UTF-8 (wh does not guess an encoding)";

/** The text of UTF-8 bytes, or undefined when they are not UTF-8: the one check replay, ingest, --data and serve share. */
export function decodeUtf8(bytes: Buffer): string | undefined {
  return isUtf8(bytes) ? bytes.toString("utf8") : undefined;
}
