import { request as httpRequest } from "node:http";
import { readFileSync } from "node:fs";

/** One request a real Segment SDK sent (../shared/fixtures/sdk-requests/README.md). */
export interface SdkRequest {
  method: string;
  path: string;
  /** In wire order, without Host and Content-Length. */
  headers: [string, string][];
  body: string;
}

const GOLDEN = new URL("../../../../shared/fixtures/sdk-requests/", import.meta.url);

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
