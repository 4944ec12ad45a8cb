import { type Sample, type SpecFields, trackSample } from "./types.js";

/**
 * Segment's B2B SaaS Spec (segment-docs src/connections/spec/b2b-saas.md): each event's
 * properties with their types; the account is the message's context.groupId.
 */
export const B2B_SAAS_FIELDS: SpecFields = {
  account_name: "string",
  type: "string",
  first_name: "string",
  last_name: "string",
  email: "string",
  phone: "string",
  username: "string",
  title: "string",
  invitee_email: "string",
  invitee_first_name: "string",
  invitee_last_name: "string",
  invitee_role: "string",
  role: "string",
  trial_start_date: "date",
  trial_end_date: "date",
  trial_plan_name: "string",
};

/** The account the samples act in, as the Spec places it: context.groupId. */
export const SAMPLE_ACCOUNT = "acct-84c2";

const sample = (event: string, properties: Record<string, unknown>): Sample =>
  trackSample("b2b-saas", B2B_SAAS_FIELDS, event, properties, { context: { groupId: SAMPLE_ACCOUNT } });

const TRIAL = { trial_start_date: "2026-11-02T08:15:00Z", trial_end_date: "2026-11-16T08:15:00Z", trial_plan_name: "Team" };

export const B2B_SAAS_SAMPLES: readonly Sample[] = [
  sample("Account Created", { account_name: "Bramble Analytics" }),
  sample("Account Deleted", { account_name: "Bramble Analytics" }),
  sample("Signed Up", {
    type: "organic",
    first_name: "Noor",
    last_name: "Haddad",
    email: "noor.haddad@bramble.example",
    phone: "+44 20 7946 0321",
    username: "noorh",
    title: "Head of Data",
  }),
  sample("Signed In", { username: "noorh" }),
  sample("Signed Out", { username: "noorh" }),
  sample("Invite Sent", { invitee_email: "tomas.ek@bramble.example", invitee_first_name: "Tomas", invitee_last_name: "Ek", invitee_role: "Editor" }),
  sample("Account Added User", { role: "Editor" }),
  sample("Account Removed User", {}),
  sample("Trial Started", TRIAL),
  sample("Trial Ended", TRIAL),
];
