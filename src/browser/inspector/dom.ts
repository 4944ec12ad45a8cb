// The page builds its elements with these only: whatever came from a request is set as
// textContent or as an attribute value, never parsed as HTML.

/** The page's element `id`, which page.html makes a `type`. */
export function byId<T extends HTMLElement>(id: string, type: abstract new () => T): T {
  const node = document.getElementById(id);
  if (!(node instanceof type)) throw new Error(`the inspector page has no ${type.name} #${id}`);
  return node;
}

/** An element with text content only. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, className?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className !== undefined) node.className = className;
  return node;
}

/** `node`, named for the tests (`data-testid`). */
export function tested<E extends HTMLElement>(node: E, testid: string): E {
  node.dataset.testid = testid;
  return node;
}
