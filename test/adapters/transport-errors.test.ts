import { describe, expect, it } from "vitest";
import { describeError } from "../../src/adapters/transport-errors.js";

/** An error as Node's TLS socket makes it: its OpenSSL code, and its message. */
function tlsError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe("describeError on a refused certificate", () => {
  it("says the same on every Node: Node 24's own advice after the reason is left out", () => {
    const node20 = describeError(tlsError("UNABLE_TO_VERIFY_LEAF_SIGNATURE", "unable to verify the first certificate"));
    const node24 = describeError(
      tlsError(
        "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
        "unable to verify the first certificate; if the root CA is installed locally, try running Node.js with --use-system-ca",
      ),
    );
    expect(node24).toEqual(node20);
    expect(node20).toEqual({
      kind: "error",
      code: "tls",
      message:
        "certificate not trusted (unable to verify the first certificate, UNABLE_TO_VERIFY_LEAF_SIGNATURE): give its CA with --ca FILE (or NODE_EXTRA_CA_CERTS); no request was sent",
    });
  });

  it("suggests --ca only where a CA is the way out, not for a wrong name", () => {
    const wrongName = describeError(tlsError("ERR_TLS_CERT_ALTNAME_INVALID", "Hostname/IP does not match certificate's altnames"));
    expect(wrongName).toMatchObject({ kind: "error", code: "tls" });
    expect(wrongName.kind === "error" && wrongName.message).not.toContain("--ca");
  });
});
