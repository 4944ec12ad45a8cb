/**
 * A tiny strict XML reader for the JUnit reports of the tests (no XML parser is a dependency):
 * it throws on anything not well-formed (unbalanced or crossed tags, an unquoted or repeated
 * attribute, a raw < or a bare & in text or attributes, a character XML 1.0 cannot hold), and
 * gives the elements as a tree.
 */

export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  text: string;
}

const NAME = "[A-Za-z_][\\w.-]*";
const ENTITY = /&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/g;

/** A C0 control but tab, newline and CR, or U+FFFE/U+FFFF: XML 1.0 cannot hold them. */
function notXml(text: string): boolean {
  return [...text].some((char) => {
    const code = char.codePointAt(0) as number;
    return (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0xfffe || code === 0xffff;
  });
}

function unescapeXml(text: string, where: string): string {
  if (text.includes("<")) throw new Error(`a raw < in ${where}`);
  if (notXml(text)) throw new Error(`a character XML cannot hold in ${where}`);
  if (text.replace(ENTITY, "").includes("&")) throw new Error(`a bare & in ${where}`);
  return text.replace(ENTITY, (entity) => {
    const named: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'" };
    if (named[entity] !== undefined) return named[entity];
    const hex = entity.startsWith("&#x");
    return String.fromCodePoint(Number.parseInt(entity.slice(hex ? 3 : 2, -1), hex ? 16 : 10));
  });
}

function parseAttributes(text: string, tag: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  const pattern = new RegExp(`^\\s+(${NAME})="([^"]*)"`);
  let rest = text;
  while (rest.trim() !== "") {
    const match = pattern.exec(rest);
    if (match === null) throw new Error(`a malformed attribute in <${tag}>: ${rest.slice(0, 40)}`);
    const [whole, name, value] = match as unknown as [string, string, string];
    if (name in attributes) throw new Error(`attribute ${name} twice in <${tag}>`);
    attributes[name] = unescapeXml(value, `<${tag} ${name}>`);
    rest = rest.slice(whole.length);
  }
  return attributes;
}

/** The document's root element; throws when the text is not well-formed XML. */
export function parseXml(xml: string): XmlElement {
  const body = xml.replace(/^<\?xml [^?]*\?>\s*/, "");
  const root: XmlElement = { name: "#document", attributes: {}, children: [], text: "" };
  const stack = [root];
  const tag = new RegExp(`<(/?)(${NAME})((?:\\s+${NAME}="[^"]*")*)\\s*(/?)>`, "y");
  let at = 0;
  while (at < body.length) {
    const next = body.indexOf("<", at);
    const end = next === -1 ? body.length : next;
    const top = stack[stack.length - 1] as XmlElement;
    top.text += unescapeXml(body.slice(at, end), `the text of <${top.name}>`);
    if (next === -1) break;
    tag.lastIndex = next;
    const match = tag.exec(body);
    if (match === null) throw new Error(`a malformed tag at ${next}: ${body.slice(next, next + 40)}`);
    const [whole, closing, name, attributeText, selfClosing] = match as unknown as [string, string, string, string, string];
    if (closing === "/") {
      if (top.name !== name) throw new Error(`</${name}> closes <${top.name}>`);
      stack.pop();
    } else {
      const element: XmlElement = { name, attributes: parseAttributes(attributeText, name), children: [], text: "" };
      top.children.push(element);
      if (selfClosing !== "/") stack.push(element);
    }
    at = next + whole.length;
  }
  if (stack.length !== 1) throw new Error(`<${stack[stack.length - 1]?.name}> is never closed`);
  if (root.children.length !== 1 || root.text.trim() !== "") throw new Error("not one root element");
  return root.children[0] as XmlElement;
}

/** The failed testcases of a JUnit report: name, the failure's message and its text. */
export function junitFailures(xml: string): { name: string; message: string; text: string }[] {
  const failures: { name: string; message: string; text: string }[] = [];
  const visit = (element: XmlElement): void => {
    const failure = element.name === "testcase" ? element.children.find((child) => child.name === "failure") : undefined;
    if (failure !== undefined) failures.push({ name: element.attributes.name ?? "", message: failure.attributes.message ?? "", text: failure.text });
    element.children.forEach(visit);
  };
  visit(parseXml(xml));
  return failures;
}
