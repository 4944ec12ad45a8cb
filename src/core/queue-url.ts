/**
 * Why a text is not a Redis queue address wh can use (`redis://[user:password@]host[:port][/db]`,
 * `rediss://` for TLS), or undefined when it is. Checked before connecting: node-redis throws a
 * bare TypeError at a database that is not a number, and connects to localhost without a host.
 */
export function queueUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "not a valid URL (expected redis://host:port/db, such as redis://127.0.0.1:6379/0)";
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") return "expected a redis:// or rediss:// URL, such as redis://127.0.0.1:6379/0";
  if (url.hostname === "") return "no host (expected redis://host:port/db, such as redis://127.0.0.1:6379/0)";
  const database = url.pathname.slice(1);
  if (database !== "" && !/^\d{1,5}$/.test(database))
    return `the database ${JSON.stringify(database)} is not a number (the path is the database index, such as /0)`;
  return undefined;
}
