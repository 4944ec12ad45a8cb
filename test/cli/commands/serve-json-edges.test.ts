import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../../../src/core/message/parse-json.js";
import { closedAfterEach } from "../../helpers/recording-server.js";
import { basic, eventually, post, servedInTempDirs } from "./serve-helpers.js";

const receiver = closedAfterEach();
const serve = servedInTempDirs();

const auth = { authorization: basic("wk"), "content-type": "application/json" };
const nested = (depth: number): string => `${"[".repeat(depth)}${"]".repeat(depth)}`;

/**
 * A batch of one track event whose properties.deep nests so that the body nests `depth` deep
 * (body, batch, event, properties: 4 levels), its own text spliced in. With `manyBrackets`, 300
 * more brackets beside it, so that counting them does not spare the nesting scan.
 */
function deepBatch(depth: number, messageId: string, manyBrackets: boolean): string {
  const pad = manyBrackets ? `,"pad":[${"[],".repeat(300)}[]]` : `,"pad":"${"x".repeat(600)}"`;
  return `{"batch":[{"type":"track","userId":"u1","event":"Deep","messageId":"${messageId}","properties":{"deep":${nested(depth - 4)}${pad}}}]}`;
}

const numberBatch = (messageId: string, number: string): string =>
  `{"batch":[{"type":"track","userId":"u1","event":"Number","messageId":"${messageId}","properties":{"n":${number},"id":"12345678901234567890"}}]}`;

describe("wh serve at the edges of the JSON it takes", () => {
  it("takes a body nested exactly at the limit, brackets few or many, and refuses one level more with the same answer", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    for (const many of [false, true]) {
      expect(await post(wh.url, "/v1/batch", deepBatch(MAX_JSON_DEPTH, `m-at-${many}`, many), auth)).toMatchObject({ status: 200, json: { success: true } });
      expect(await post(wh.url, "/v1/batch", deepBatch(MAX_JSON_DEPTH + 1, `m-over-${many}`, many), auth)).toMatchObject({
        status: 400,
        json: { success: false, code: "invalid_json", message: `the body is not JSON: nested deeper than ${MAX_JSON_DEPTH} levels` },
      });
    }
    await eventually(() => hook.requests.length === 2, "two deliveries");
    for (const request of hook.requests) expect(request.body.toString()).toContain(`"deep":${nested(MAX_JSON_DEPTH - 4)}`);
  });

  it("keeps a number at the edge of what a double holds exactly and refuses the next one, digits in strings aside", async () => {
    const hook = await receiver();
    const wh = await serve(["--url", hook.url]);
    for (const [id, number] of [
      ["m-2^53", "9007199254740992"],
      ["m-15", "123456789012345"],
      ["m-exp", "1e3"],
    ] as const)
      expect(await post(wh.url, "/v1/batch", numberBatch(id, number), auth)).toMatchObject({ status: 200, json: { success: true } });
    expect(await post(wh.url, "/v1/batch", numberBatch("m-over", "9007199254740993"), auth)).toMatchObject({
      status: 400,
      json: {
        success: false,
        code: "invalid_request",
        message: "the number 9007199254740993 cannot be sent exactly (it would become 9007199254740992); send it as a string",
      },
    });
    await eventually(() => hook.requests.length === 3, "three deliveries");
    const sent = hook.requests.map((request) => request.body.toString());
    expect(sent.map((body) => /"n":([^,}]+)/.exec(body)?.[1]).sort()).toEqual(["1000", "123456789012345", "9007199254740992"]);
    for (const body of sent) expect(body).toContain('"id":"12345678901234567890"');
  });
});
