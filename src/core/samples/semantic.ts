import { SAMPLE_ACCOUNT } from "./b2b-saas.js";
import { MOBILE_CONTEXT } from "./mobile.js";
import { SAMPLE_ANONYMOUS, SAMPLE_USER, type Sample, type SpecFields } from "./types.js";

/**
 * The semantic fields of Segment's other calls: identify's reserved traits (segment-docs
 * src/connections/spec/identify.md), group's (group.md), page's properties (page.md) and
 * screen's (screen.md); alias (alias.md) has none.
 */

export const IDENTIFY_TRAITS: SpecFields = {
  address: "object",
  age: "number",
  avatar: "string",
  birthday: "date",
  company: "object",
  createdAt: "date",
  description: "string",
  email: "string",
  firstName: "string",
  gender: "string",
  id: "string",
  lastName: "string",
  name: "string",
  phone: "string",
  title: "string",
  username: "string",
  website: "string",
};

export const GROUP_TRAITS: SpecFields = {
  address: "object",
  avatar: "string",
  createdAt: "date",
  description: "string",
  email: "string",
  employees: "string",
  id: "string",
  industry: "string",
  name: "string",
  phone: "string",
  website: "string",
  plan: "string",
};

export const PAGE_PROPERTIES: SpecFields = {
  name: "string",
  path: "string",
  referrer: "string",
  search: "string",
  title: "string",
  url: "string",
  keywords: "array",
};

export const SCREEN_PROPERTIES: SpecFields = { name: "string" };

const identity = { userId: SAMPLE_USER, anonymousId: SAMPLE_ANONYMOUS };

export const SEMANTIC_SAMPLES: readonly Sample[] = [
  {
    name: "Identify",
    type: "identify",
    spec: "semantic",
    fields: IDENTIFY_TRAITS,
    message: {
      type: "identify",
      ...identity,
      traits: {
        email: "noor.haddad@bramble.example",
        firstName: "Noor",
        lastName: "Haddad",
        name: "Noor Haddad",
        username: "noorh",
        phone: "+44 20 7946 0321",
        title: "Head of Data",
        age: 34,
        birthday: "1992-05-17",
        gender: "female",
        createdAt: "2026-11-02T08:14:03Z",
        address: { street: "12 Wharf Road", city: "London", postalCode: "N1 7GR", country: "GB" },
        company: { id: SAMPLE_ACCOUNT, name: "Bramble Analytics", industry: "Software", employee_count: 48, plan: "Team" },
        website: "https://bramble.example",
      },
    },
  },
  {
    name: "Group",
    type: "group",
    spec: "semantic",
    fields: GROUP_TRAITS,
    message: {
      type: "group",
      userId: SAMPLE_USER,
      groupId: SAMPLE_ACCOUNT,
      traits: {
        name: "Bramble Analytics",
        industry: "Software",
        employees: "48",
        plan: "Team",
        email: "billing@bramble.example",
        website: "https://bramble.example",
        createdAt: "2026-11-02T08:15:00Z",
        address: { city: "London", country: "GB" },
      },
    },
  },
  {
    name: "Page",
    type: "page",
    spec: "semantic",
    fields: PAGE_PROPERTIES,
    message: {
      type: "page",
      ...identity,
      name: "Trail Runner 3",
      category: "Shoes",
      properties: {
        name: "Trail Runner 3",
        path: "/p/p-1001",
        referrer: "https://search.example.org/?q=trail+shoes",
        search: "?utm_source=newsletter",
        title: "Trail Runner 3 | Shop",
        url: "https://shop.example.com/p/p-1001?utm_source=newsletter",
        keywords: ["trail", "running", "shoes"],
      },
    },
  },
  {
    name: "Screen",
    type: "screen",
    spec: "semantic",
    fields: SCREEN_PROPERTIES,
    message: { type: "screen", ...identity, name: "Product Detail", properties: { name: "Product Detail" }, context: MOBILE_CONTEXT },
  },
  { name: "Alias", type: "alias", spec: "semantic", fields: {}, message: { type: "alias", userId: SAMPLE_USER, previousId: SAMPLE_ANONYMOUS } },
];
