/**
 * The seven message types the destination posts. Apart from the schema, so that what only needs
 * the names (the command registry, completion, the inspector page) does not load zod.
 */
export const MESSAGE_TYPES = ["identify", "track", "page", "screen", "group", "alias", "delete"] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];
