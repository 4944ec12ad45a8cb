import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { makeTempDir } from "../../helpers/run-wh.js";
import { basic, post, servedInTempDirs } from "./serve-helpers.js";
import { goldenRequests, replay } from "./sdk-requests.js";

const receiver = closedAfterEach();
const serve = servedInTempDirs();

/**
 * What analytics-python 2.3.4 does with an answer (segment/analytics/request.py, consumer.py):
 * 2xx is done; otherwise it raises APIError(status, body.code, body.message), and a KeyError when
 * either is missing, which is no APIError and so is retried; an APIError with a 4xx other than
 * 429 is final (the batch is dropped), anything else is retried.
 */
function analyticsPythonOutcome(status: number, text: string): "done" | "final" | "retried" {
  if (status >= 200 && status < 300) return "done";
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const apiError = typeof body === "object" && body !== null && "code" in body && "message" in body;
  if (!apiError) return "retried";
  return status >= 400 && status < 500 && status !== 429 ? "final" : "retried";
}

const [python] = goldenRequests("analytics-python-2.3.4.ndjson");

describe("wh serve's error answers, as analytics-python reads them", () => {
  it("answers a request it cannot take with success false, a stable code and a message, final for the SDK", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url, "--max-body", "1kb"]);
    const tooLarge = await replay(wh.url, python!);
    expect(tooLarge.status).toBe(400);
    expect(JSON.parse(tooLarge.body)).toEqual({ success: false, code: "body_too_large", message: expect.stringContaining("larger than 1000 bytes") });
    expect(analyticsPythonOutcome(tooLarge.status, tooLarge.body)).toBe("final");
    const malformed = await replay(wh.url, { ...python!, body: python!.body.slice(0, 200) });
    expect(JSON.parse(malformed.body)).toMatchObject({ success: false, code: "invalid_json" });
    expect(analyticsPythonOutcome(malformed.status, malformed.body)).toBe("final");
    const notFound = await replay(wh.url, { ...python!, path: "/v2/batch" });
    expect(JSON.parse(notFound.body)).toMatchObject({ success: false, code: "not_found" });
    expect(wh.stdout()).toContain('"code":"body_too_large"');
  });

  it("answers a full spool with 503, code unavailable and Retry-After, which the SDK retries", async () => {
    const dead = await receiver({ replies: [503] });
    const wh = await serve(["--url", dead.url, "--max-spool", "2kb", "--retry-window", "1h"]);
    let answer = await replay(wh.url, python!);
    for (let tries = 0; answer.status === 200 && tries < 20; tries += 1)
      answer = await replay(wh.url, { ...python!, body: python!.body.replaceAll('"py-calls-', `"py-${tries}-`) });
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body)).toEqual({ success: false, code: "unavailable", message: expect.any(String) });
    expect(analyticsPythonOutcome(answer.status, answer.body)).toBe("retried");
  });

  it("answers an unknown write key with 401 (tracking) or 404 (settings) and code unknown_write_key, a known one its settings", async () => {
    const hook = await receiver();
    const dir = await makeTempDir();
    await writeFile(join(dir, ".whrc.json"), JSON.stringify({ sources: { app: { writeKey: "wk-app", webhooks: [{ url: hook.url }] } } }));
    const wh = await serve([], dir);
    const answer = await post(wh.url, "/v1/track", JSON.stringify({ userId: "u", event: "E" }), {
      authorization: basic("wk-other"),
      "content-type": "application/json",
    });
    expect(answer).toMatchObject({ status: 401, json: { success: false, code: "unknown_write_key" } });
    const settings = await fetch(`${wh.url}/v1/projects/wk-other/settings`);
    expect(settings.status).toBe(404);
    expect(await settings.json()).toMatchObject({ success: false, code: "unknown_write_key" });
    const known = (await (await fetch(`${wh.url}/v1/projects/wk-app/settings`)).json()) as { integrations: Record<string, unknown> };
    expect(known.integrations["Segment.io"]).toMatchObject({ apiKey: "wk-app", apiHost: `${new URL(wh.url).host}/v1`, protocol: "http" });
  });
});
