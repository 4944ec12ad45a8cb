import { describe, expect, it } from "vitest";
import { MASK, redactHeaderValue, redactUrl } from "../../src/core/redact.js";

describe("redactUrl", () => {
  it("masks a password", () => {
    expect(redactUrl(new URL("https://hook-user:hunter2@hooks.example.com/in?x=1"))).toBe("https://hook-user:***@hooks.example.com/in?x=1");
  });

  it("masks a percent-encoded password", () => {
    expect(redactUrl(new URL("https://u:p%40ss@hooks.example.com/"))).toBe("https://u:***@hooks.example.com/");
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

describe("redactHeaderValue", () => {
  it("uses *** as the mask", () => {
    expect(MASK).toBe("***");
  });

  it.each(["Authorization", "authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "X-Auth-Token", "X-Webhook-Secret", "X-Password", "X-Hub-Signature"])(
    "masks %s",
    (name) => {
      expect(redactHeaderValue(name, "Bearer t0k")).toBe("***");
    },
  );

  it.each(["X-Team", "Accept", "X-Request-Source"])("shows %s", (name) => {
    expect(redactHeaderValue(name, "growth")).toBe("growth");
  });
});
