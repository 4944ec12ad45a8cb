import { PRODUCTS, productFields } from "./ecommerce.js";
import { SeededRandom } from "./random.js";
import { BROWSERS, COMPANIES, newVisitor, planVisit, type Step, type StepKind, type Visitor } from "./visitors.js";

/**
 * Realistic Segment traffic, made on demand (`wh samples generate`): visitors of an invented shop,
 * each visit in time order, the visitors interleaved by time. One message at a time from a
 * generator, and only the visitors held: memory grows with --users, never with --events.
 */

export interface TrafficOptions {
  readonly users: number;
  readonly events: number;
  readonly seed: number;
  /** When the first visits start, in ms since the epoch. */
  readonly start: number;
}

const SHOP = "https://shop.example.com";
const HOUR = 3_600_000;
const CURRENCY = "EUR";

type Part = Record<string, unknown>;
type Build = (visitor: Visitor, step: Step, random: SeededRandom) => Part;

const track = (event: string, properties: Part): Part => ({ type: "track", event, properties });
const product = (step: Step): Part => productFields(PRODUCTS[step.product ?? 0] ?? PRODUCTS[0], 1);
const cartProducts = (visitor: Visitor): Part[] => visitor.cart.map((index, position) => productFields(PRODUCTS[index] ?? PRODUCTS[0], position + 1));

/** An order's money, from the cart: prices include 20 % VAT; shipping is free from 50. */
function orderTotals(visitor: Visitor): Part {
  const subtotal = visitor.cart.reduce((sum, index) => sum + (PRODUCTS[index]?.price ?? 0), 0);
  const shipping = subtotal >= 50 ? 0 : 4.9;
  const cents = (value: number) => Math.round(value * 100) / 100;
  return {
    subtotal: cents(subtotal),
    shipping,
    tax: cents(subtotal / 6),
    total: cents(subtotal + shipping),
    revenue: cents(subtotal - subtotal / 6),
    currency: CURRENCY,
  };
}

function pageCall(_visitor: Visitor, step: Step): Part {
  const shown = step.product === undefined ? undefined : PRODUCTS[step.product];
  const path = shown === undefined ? "/" : `/p/${shown.product_id}`;
  const title = shown === undefined ? "Home | Shop" : `${shown.name} | Shop`;
  return {
    type: "page",
    name: shown?.name ?? "Home",
    properties: { path, title, url: `${SHOP}${path}`, referrer: shown === undefined ? "https://search.example.org/" : `${SHOP}/` },
  };
}

function identifyCall(visitor: Visitor): Part {
  const company = visitor.company === undefined ? undefined : COMPANIES[visitor.company];
  const email = `${visitor.firstName}.${visitor.lastName}@example.com`
    .toLowerCase()
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "");
  const traits: Part = { email, firstName: visitor.firstName, lastName: visitor.lastName, name: `${visitor.firstName} ${visitor.lastName}` };
  if (company !== undefined) traits.company = { id: company.id, name: company.name, industry: company.industry };
  return { type: "identify", traits };
}

function groupCall(visitor: Visitor): Part {
  const { id, ...traits } = COMPANIES[visitor.company ?? 0] ?? COMPANIES[0];
  return { type: "group", groupId: id, traits };
}

const BUILD: Readonly<Record<StepKind, Build>> = {
  page: pageCall,
  search: (_visitor, _step, random) =>
    track("Products Searched", { query: random.pick(["trail shoes", "rain jacket", "merino socks", "headlamp", "daypack"]) }),
  list: () =>
    track("Product List Viewed", {
      list_id: "list-bestsellers",
      category: "Bestsellers",
      products: PRODUCTS.slice(0, 4).map((each, index) => productFields(each, index + 1)),
    }),
  view: (_visitor, step) => track("Product Viewed", { ...product(step), currency: CURRENCY }),
  add: (visitor, step) => track("Product Added", { cart_id: `cart-${visitor.anonymousId.slice(0, 8)}`, ...product(step) }),
  cart: (visitor) => track("Cart Viewed", { cart_id: `cart-${visitor.anonymousId.slice(0, 8)}`, products: cartProducts(visitor) }),
  checkout: (visitor, _step, random) => {
    visitor.checkoutId = `chk-${random.uuid().slice(0, 8)}`;
    visitor.orderId = `ord-${random.int(100_000, 999_999)}`;
    return track("Checkout Started", { checkout_id: visitor.checkoutId, order_id: visitor.orderId, ...orderTotals(visitor), products: cartProducts(visitor) });
  },
  "step-viewed": (visitor, step) => track("Checkout Step Viewed", { checkout_id: visitor.checkoutId, step: step.step, shipping_method: "Parcel" }),
  "step-completed": (visitor, step) => track("Checkout Step Completed", { checkout_id: visitor.checkoutId, step: step.step, shipping_method: "Parcel" }),
  coupon: (visitor) => track("Coupon Applied", { order_id: visitor.orderId, coupon_id: "cpn-welcome5", coupon_name: "Welcome 5 off", discount: 5 }),
  payment: (visitor, step, random) =>
    track("Payment Info Entered", {
      checkout_id: visitor.checkoutId,
      order_id: visitor.orderId,
      step: step.step,
      payment_method: random.pick(["Visa", "Mastercard", "PayPal"]),
    }),
  order: (visitor) =>
    track("Order Completed", { checkout_id: visitor.checkoutId, order_id: visitor.orderId, ...orderTotals(visitor), products: cartProducts(visitor) }),
  signup: (visitor) => {
    visitor.known = true;
    return track("Signed Up", { type: "organic", first_name: visitor.firstName, last_name: visitor.lastName });
  },
  signin: (visitor) => track("Signed In", { username: visitor.userId }),
  alias: (visitor) => ({ type: "alias", previousId: visitor.anonymousId }),
  identify: identifyCall,
  group: groupCall,
};

/** The message of a visitor's next step, with what every call carries: ids, time, context. */
function message(visitor: Visitor, step: Step, random: SeededRandom): Part {
  const part = BUILD[step.kind](visitor, step, random);
  const browser = BROWSERS[visitor.browser] ?? BROWSERS[0];
  const identity = visitor.known ? { userId: visitor.userId, anonymousId: visitor.anonymousId } : { anonymousId: visitor.anonymousId };
  // An alias names the new userId and the anonymousId it replaces (previousId), nothing else.
  const who = part.type === "alias" ? { userId: visitor.userId } : identity;
  return {
    ...part,
    ...who,
    messageId: random.uuid(),
    timestamp: new Date(visitor.at).toISOString(),
    context: {
      ip: `198.51.100.${(visitor.index % 254) + 1}`,
      locale: browser.locale,
      userAgent: browser.userAgent,
      library: { name: "analytics.js", version: "next-1.72.0" },
    },
  };
}

/** The traffic, message by message, in time order (each visitor's strictly so). */
export function* generateTraffic(options: TrafficOptions): Generator<Part> {
  const random = new SeededRandom(options.seed);
  const queue = new VisitorQueue();
  for (let index = 0; index < options.users; index += 1) {
    const visitor = newVisitor(index, random, options.start + random.wait(24 * HOUR));
    visitor.steps = planVisit(visitor, random);
    queue.push(visitor);
  }
  for (let count = 0; count < options.events; count += 1) {
    const visitor = queue.pop();
    if (visitor === undefined) return;
    const step = visitor.steps.shift() as Step;
    yield message(visitor, step, random);
    if (visitor.steps.length > 0) {
      visitor.at += 3_000 + random.wait(40_000);
    } else {
      // The next visit: hours to days later, 2 days on average.
      visitor.at += HOUR / 2 + random.wait(48 * HOUR);
      visitor.steps = planVisit(visitor, random);
    }
    queue.push(visitor);
  }
}

/** A binary min-heap of visitors by the time of their next step (then by index: ties are reproducible). */
class VisitorQueue {
  private readonly heap: Visitor[] = [];

  push(visitor: Visitor): void {
    const heap = this.heap;
    heap.push(visitor);
    let at = heap.length - 1;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!before(visitor, heap[parent] as Visitor)) break;
      heap[at] = heap[parent] as Visitor;
      at = parent;
    }
    heap[at] = visitor;
  }

  pop(): Visitor | undefined {
    const heap = this.heap;
    const first = heap[0];
    const last = heap.pop();
    if (first === undefined || last === undefined || heap.length === 0) return first;
    let at = 0;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && before(heap[right] as Visitor, heap[left] as Visitor) ? right : left;
      if (!before(heap[child] as Visitor, last)) break;
      heap[at] = heap[child] as Visitor;
      at = child;
    }
    heap[at] = last;
    return first;
  }
}

function before(a: Visitor, b: Visitor): boolean {
  return a.at < b.at || (a.at === b.at && a.index < b.index);
}
