import { type Sample, type SpecFields, trackSample } from "./types.js";

/**
 * Segment's E-commerce v2 Spec (segment-docs src/connections/spec/ecommerce/v2.md): the
 * properties its events document, with their types, and one invented value for each event.
 */

/** The fields of a product, in the events about one product and in every `products` array. */
export const PRODUCT_FIELDS: SpecFields = {
  product_id: "string",
  sku: "string",
  category: "string",
  name: "string",
  brand: "string",
  variant: "string",
  price: "number",
  quantity: "integer",
  coupon: "string",
  position: "integer",
  url: "string",
  image_url: "string",
};

export const ECOMMERCE_FIELDS: SpecFields = {
  ...PRODUCT_FIELDS,
  query: "string",
  list_id: "string",
  products: "array",
  filters: "array",
  sorts: "array",
  promotion_id: "string",
  creative: "string",
  cart_id: "string",
  checkout_id: "string",
  order_id: "string",
  affiliation: "string",
  value: "number",
  revenue: "number",
  total: "number",
  subtotal: "number",
  shipping: "number",
  tax: "number",
  discount: "number",
  currency: "string",
  step: "integer",
  shipping_method: "string",
  payment_method: "string",
  coupon_id: "string",
  coupon_name: "string",
  reason: "string",
  wishlist_id: "string",
  wishlist_name: "string",
  share_via: "string",
  share_message: "string",
  recipient: "string",
  review_id: "string",
  review_body: "string",
  rating: "number",
};

/** An invented shop's shelf: what the samples and the generator's sessions browse and buy. */
export const PRODUCTS = [
  { product_id: "p-1001", sku: "TR-RUN-42", category: "Shoes", name: "Trail Runner 3", brand: "Northpeak", variant: "Moss", price: 119 },
  { product_id: "p-1002", sku: "WB-STEEL-75", category: "Outdoor", name: "Steel Bottle 750 ml", brand: "Hydrale", variant: "Slate", price: 24.5 },
  { product_id: "p-1003", sku: "JK-RAIN-M", category: "Jackets", name: "Featherlight Rain Shell", brand: "Northpeak", variant: "M", price: 189 },
  { product_id: "p-1004", sku: "BP-DAY-22", category: "Bags", name: "Daypack 22 L", brand: "Kestrel", variant: "Ochre", price: 79.9 },
  { product_id: "p-1005", sku: "SK-MER-3", category: "Socks", name: "Merino Hiking Socks (3 pairs)", brand: "Woolbury", variant: "L", price: 29 },
  { product_id: "p-1006", sku: "HL-LUM-400", category: "Outdoor", name: "Headlamp 400 lm", brand: "Lumenor", variant: "Black", price: 44.95 },
  { product_id: "p-1007", sku: "TS-ORG-S", category: "Tops", name: "Organic Cotton Tee", brand: "Fernway", variant: "S", price: 22 },
  { product_id: "p-1008", sku: "PL-FOAM-XL", category: "Camping", name: "Foam Sleeping Pad", brand: "Kestrel", variant: "XL", price: 54 },
] as const;

export type Product = (typeof PRODUCTS)[number];

const SHOP = "https://shop.example.com";

/** A product as the Spec's events carry it: at a position of a list, in a quantity. */
export function productFields(product: Product, position: number, quantity = 1): Record<string, unknown> {
  return { ...product, quantity, position, url: `${SHOP}/p/${product.product_id}`, image_url: `${SHOP}/img/${product.sku}.jpg` };
}

/** Products as a list shows them, at their place in it. */
const [shoes, bottle, jacket] = [productFields(PRODUCTS[0], 1), productFields(PRODUCTS[1], 2), productFields(PRODUCTS[2], 3)];
/** In a cart, the products are numbered by their place in it. */
const CART = { cart_id: "cart-9d41f0", products: [productFields(PRODUCTS[1], 1), productFields(PRODUCTS[3], 2)] };
/** The cart's order: 104.40 of products, 10 off, 5.10 shipping; prices include 20 % VAT. */
const ORDER = {
  checkout_id: "chk-3b8e77",
  order_id: "ord-50412",
  affiliation: "Web shop",
  subtotal: 104.4,
  discount: 10,
  shipping: 5.1,
  tax: 16.58,
  coupon: "SPRING10",
  currency: "EUR",
};
const totals = { total: 99.5, revenue: 77.82, value: 99.5 };
const STEP = { checkout_id: ORDER.checkout_id, step: 2, shipping_method: "Parcel, 2-3 days", payment_method: "Visa" };
const COUPON = { order_id: ORDER.order_id, cart_id: CART.cart_id, coupon_id: "cpn-spring10", coupon_name: "Spring 10 off", discount: 10 };

const sample = (event: string, properties: Record<string, unknown>): Sample => trackSample("ecommerce", ECOMMERCE_FIELDS, event, properties);

export const ECOMMERCE_SAMPLES: readonly Sample[] = [
  sample("Products Searched", { query: "waterproof trail shoes" }),
  sample("Product List Viewed", { list_id: "list-shoes", category: "Shoes", products: [shoes, jacket] }),
  sample("Product List Filtered", {
    list_id: "list-shoes",
    category: "Shoes",
    filters: [{ type: "size", value: "42" }],
    sorts: [{ type: "price", value: "asc" }],
    products: [shoes],
  }),
  sample("Promotion Viewed", { promotion_id: "promo-spring", creative: "spring-banner-top", name: "Spring sale" }),
  sample("Promotion Clicked", { promotion_id: "promo-spring", creative: "spring-banner-top", name: "Spring sale" }),
  sample("Product Clicked", shoes),
  sample("Product Viewed", { ...shoes, currency: "EUR", value: 119 }),
  sample("Product Added", { cart_id: CART.cart_id, ...bottle }),
  sample("Product Removed", { cart_id: CART.cart_id, ...jacket }),
  sample("Cart Viewed", CART),
  sample("Checkout Started", { ...ORDER, ...totals, products: CART.products }),
  sample("Checkout Step Viewed", STEP),
  sample("Checkout Step Completed", STEP),
  sample("Payment Info Entered", { ...STEP, step: 3, order_id: ORDER.order_id }),
  sample("Order Completed", { ...ORDER, ...totals, products: CART.products }),
  sample("Order Updated", { ...ORDER, ...totals, products: CART.products }),
  sample("Order Refunded", { order_id: ORDER.order_id, total: 24.5, currency: "EUR", products: [bottle] }),
  sample("Order Cancelled", { ...ORDER, ...totals, products: CART.products }),
  sample("Coupon Entered", COUPON),
  sample("Coupon Applied", COUPON),
  sample("Coupon Denied", { ...COUPON, reason: "Coupon expired" }),
  sample("Coupon Removed", COUPON),
  sample("Product Added to Wishlist", { wishlist_id: "wl-71", wishlist_name: "Summer hikes", ...jacket }),
  sample("Product Shared", { share_via: "email", share_message: "Look at this one", recipient: "friend@example.org", ...shoes }),
  sample("Product Reviewed", { product_id: shoes.product_id, review_id: "rev-2290", review_body: "Grippy on wet rock, true to size.", rating: 4.5 }),
];
