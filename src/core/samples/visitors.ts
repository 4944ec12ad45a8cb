import { PRODUCTS } from "./ecommerce.js";
import type { SeededRandom } from "./random.js";

/**
 * The people of generated traffic (`wh samples generate`): who they are, and what each of their
 * visits to the invented shop does, planned as steps when the visit starts.
 */

const FIRST_NAMES = [
  "Amara",
  "Bastien",
  "Chen",
  "Dagny",
  "Emeka",
  "Farah",
  "Goran",
  "Hana",
  "Ines",
  "Jonas",
  "Kiri",
  "Lucía",
  "Mateo",
  "Nadia",
  "Oskar",
  "Priya",
];
const LAST_NAMES = [
  "Achebe",
  "Brandt",
  "Castillo",
  "Dahl",
  "Erdem",
  "Fontaine",
  "Guo",
  "Haddad",
  "Ivanova",
  "Jansen",
  "Kowalski",
  "Lindqvist",
  "Moreau",
  "Novak",
  "Okafor",
  "Petrov",
];

export const COMPANIES = [
  { id: "acct-1f20", name: "Bramble Analytics", industry: "Software", employees: "48", plan: "Team" },
  { id: "acct-2b71", name: "Harbour & Pine", industry: "Retail", employees: "310", plan: "Business" },
  { id: "acct-3c09", name: "Lumen Clinics", industry: "Healthcare", employees: "1200", plan: "Enterprise" },
  { id: "acct-4d55", name: "Quarry Lane Studio", industry: "Design", employees: "9", plan: "Starter" },
] as const;

export const BROWSERS = [
  { userAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15", locale: "en-GB" },
  { userAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", locale: "de-DE" },
  {
    userAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    locale: "fr-FR",
  },
  { userAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", locale: "nl-NL" },
  { userAgent: "Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", locale: "es-ES" },
] as const;

export type StepKind =
  | "page"
  | "search"
  | "list"
  | "view"
  | "add"
  | "cart"
  | "checkout"
  | "step-viewed"
  | "step-completed"
  | "coupon"
  | "payment"
  | "order"
  | "signup"
  | "signin"
  | "alias"
  | "identify"
  | "group";

/** One thing a visit does; `product` indexes PRODUCTS, `step` numbers a checkout step. */
export interface Step {
  readonly kind: StepKind;
  readonly product?: number;
  readonly step?: number;
}

/** A person: anonymous until they sign up, then known by their userId (keeping their anonymousId). */
export interface Visitor {
  readonly index: number;
  readonly anonymousId: string;
  readonly userId: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly browser: number;
  /** Their company (COMPANIES), for the group calls; undefined: a private customer. */
  readonly company: number | undefined;
  known: boolean;
  /** When the next step happens, in ms since the epoch. */
  at: number;
  /** The rest of the current visit, next first. */
  steps: Step[];
  /** What the current visit put in the cart. */
  cart: number[];
  /** The current checkout's ids, once one started. */
  checkoutId: string;
  orderId: string;
}

export function newVisitor(index: number, random: SeededRandom, at: number): Visitor {
  return {
    index,
    anonymousId: random.uuid(),
    userId: `user-${String(index + 1).padStart(7, "0")}`,
    firstName: random.pick(FIRST_NAMES),
    lastName: random.pick(LAST_NAMES),
    browser: random.int(0, BROWSERS.length - 1),
    company: random.chance(0.35) ? random.int(0, COMPANIES.length - 1) : undefined,
    known: false,
    at,
    steps: [],
    cart: [],
    checkoutId: "",
    orderId: "",
  };
}

/** One visit: a landing page, browsing, perhaps a cart, a checkout and an order, a sign-up or a sign-in. */
export function planVisit(visitor: Visitor, random: SeededRandom): Step[] {
  const steps: Step[] = [{ kind: "page" }];
  if (visitor.known && random.chance(0.3)) steps.push({ kind: "signin" }, ...(random.chance(0.5) ? [{ kind: "identify" } as const] : []));
  if (random.chance(0.3)) steps.push({ kind: "search" });
  if (random.chance(0.6)) steps.push({ kind: "list" });
  const viewed = Array.from({ length: random.int(1, 3) }, () => random.int(0, PRODUCTS.length - 1));
  for (const product of viewed) steps.push({ kind: "page", product }, { kind: "view", product });
  visitor.cart = [...new Set(viewed.filter(() => random.chance(0.15)))];
  for (const product of visitor.cart) steps.push({ kind: "add", product });
  if (visitor.cart.length > 0) {
    steps.push({ kind: "cart" });
    if (random.chance(0.45)) steps.push(...checkout(visitor, random));
  } else if (!visitor.known && random.chance(0.06)) {
    steps.push(...signUp(visitor));
  }
  if (visitor.known && visitor.company !== undefined && random.chance(0.05)) steps.push({ kind: "group" });
  return steps;
}

/** Most sign up to check out; some check out as guests, staying anonymous. */
function checkout(visitor: Visitor, random: SeededRandom): Step[] {
  const steps = !visitor.known && random.chance(0.7) ? signUp(visitor) : [];
  steps.push({ kind: "checkout" }, { kind: "step-viewed", step: 1 }, { kind: "step-completed", step: 1 });
  if (random.chance(0.15)) steps.push({ kind: "coupon" });
  steps.push({ kind: "step-viewed", step: 2 }, { kind: "payment", step: 2 });
  if (random.chance(0.7)) steps.push({ kind: "order" });
  return steps;
}

/** Signed Up, then the alias from the anonymous id to the new userId, the identify, and the company's group. */
function signUp(visitor: Visitor): Step[] {
  const steps: Step[] = [{ kind: "signup" }, { kind: "alias" }, { kind: "identify" }];
  if (visitor.company !== undefined) steps.push({ kind: "group" });
  return steps;
}
