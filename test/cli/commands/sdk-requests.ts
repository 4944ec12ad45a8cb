import { request as httpRequest } from "node:http";
import { readFileSync } from "node:fs";

/** One request a real Segment SDK sent (fixtures/sdk-requests/README.md). */
export interface SdkRequest {
  method: string;
  path: string;
  /** In wire order, without Host and Content-Length. */
  headers: [string, string][];
  body: string;
}

/**
 * The requests captured from real SDKs, copied byte for byte from the project's shared fixtures
 * (../shared/fixtures/sdk-requests beside the repository, which a clone elsewhere does not have);
 * test/cli/commands/sdk-requests-copy.test.ts holds the copies to the originals where they are present.
 */
export const GOLDEN = new URL("../../../fixtures/sdk-requests/", import.meta.url);

export function goldenRequests(file: string): SdkRequest[] {
  return readFileSync(new URL(file, GOLDEN), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as SdkRequest);
}

/** Sends a golden request as the SDK did: its headers in their order, its body byte for byte. */
export function replay(url: string, sdkRequest: SdkRequest): Promise<{ status: number; body: string }> {
  const body = Buffer.from(sdkRequest.body, "utf8");
  const target = new URL(sdkRequest.path, url);
  const headers = [...sdkRequest.headers.flat(), "Host", target.host, "Content-Length", String(body.length)];
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(target, { method: sdkRequest.method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
    });
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}
