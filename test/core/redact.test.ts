import { describe, expect, it } from "vitest";
import { MASK, redactHeaders, redactHeaderValue, redactRequestTarget, redactUrl, redactUrlText } from "../../src/core/redact.js";

describe("redactUrl", () => {
  it("masks a user name and a password", () => {
    expect(redactUrl(new URL("https://hook-user:hunter2@hooks.example.com/in?x=1"))).toBe("https://***:***@hooks.example.com/in?x=1");
  });

  it("masks a user name alone: it is often a token", () => {
    expect(redactUrl(new URL("http://sk_live_abc@127.0.0.1:8080/hook"))).toBe("http://***@127.0.0.1:8080/hook");
  });

  it("masks a password without a user name", () => {
    expect(redactUrl(new URL("https://:hunter2@hooks.example.com/in"))).toBe("https://:***@hooks.example.com/in");
  });

  it("masks a percent-encoded password", () => {
    expect(redactUrl(new URL("https://u:p%40ss@hooks.example.com/"))).toBe("https://***:***@hooks.example.com/");
  });

  it("masks the values of secret-looking query parameters, their names decoded as a server would", () => {
    expect(redactUrl(new URL("https://h.example/in?token=t0k&plain=1&api%5Fkey=k3y&to%6Ben=t1"))).toBe(
      "https://h.example/in?token=***&plain=1&api%5Fkey=***&to%6Ben=***",
    );
  });

  it.each([
    "https://h.example/?token=%zz",
    "https://h.example/?%zz&token=t0k",
    "https://h.example/?%E0%A4%A=1&token=t0k",
    "https://h.example/?to%zzken=1&key=t0k",
  ])("never throws on a malformed percent escape, and still masks: %s", (text) => {
    const shown = redactUrl(new URL(text));
    expect(shown).not.toContain("t0k");
    expect(shown).toContain(`=${MASK}`);
  });

  it("leaves a URL without a password as it is", () => {
    expect(redactUrl(new URL("https://hooks.example.com/in"))).toBe("https://hooks.example.com/in");
  });

  it("does not change the URL it is given", () => {
    const url = new URL("https://u:hunter2@hooks.example.com/");
    redactUrl(url);
    expect(url.password).toBe("hunter2");
  });
});

describe("redactUrlText", () => {
  it.each([
    ["http://sk_live_abc@", "http://***@"],
    ["ftp://user:pa55word@x/?token=t0k", "ftp://***:***@x/?token=***"],
    ["not a url //user:pa55@host", "not a url //***:***@host"],
  ])("masks what it can of %s", (text, shown) => {
    expect(redactUrlText(text)).toBe(shown);
  });
});

describe("redactRequestTarget", () => {
  it("masks secret-looking query values of a request's path, and keeps the path as sent", () => {
    expect(redactRequestTarget("/hooks/../in?token=t0k&x=%zz")).toBe("/hooks/../in?token=***&x=%zz");
    expect(redactRequestTarget("/in")).toBe("/in");
  });
});

describe("redactHeaders", () => {
  it("masks every credential-like header of a request, keeps X-Signature (the body's HMAC, needed to verify a capture) and joins repeated ones", () => {
    const shown = redactHeaders({
      authorization: "Bearer t0k",
      "x-auth-token": "t0k",
      "x-api-key": "t0k",
      cookie: "s=t0k",
      "set-cookie": ["a=t0k", "b=t0k"],
      "x-hub-signature": "sha1=t0k",
      "x-signature": "0123456789abcdef0123456789abcdef01234567",
      "x-forwarded-for": ["10.0.0.1", "10.0.0.2"],
      "user-agent": "wh/0.1.0",
      "content-length": undefined,
    });
    expect(shown).toEqual({
      authorization: MASK,
      "x-auth-token": MASK,
      "x-api-key": MASK,
      cookie: MASK,
      "set-cookie": MASK,
      "x-hub-signature": MASK,
      "x-signature": "0123456789abcdef0123456789abcdef01234567",
      "x-forwarded-for": "10.0.0.1, 10.0.0.2",
      "user-agent": "wh/0.1.0",
    });
  });
});

describe("redactHeaderValue", () => {
  it("uses *** as the mask", () => {
    expect(MASK).toBe("***");
  });

  it.each([
    "Authorization",
    "authorization",
    "Proxy-Authorization",
    "Cookie",
    "Set-Cookie",
    "X-Api-Key",
    "X-Auth-Token",
    "X-Webhook-Secret",
    "X-Password",
    "X-Hub-Signature",
  ])("masks %s", (name) => {
    expect(redactHeaderValue(name, "Bearer t0k")).toBe("***");
  });

  it.each(["X-Team", "Accept", "X-Request-Source"])("shows %s", (name) => {
    expect(redactHeaderValue(name, "growth")).toBe("growth");
  });
});
