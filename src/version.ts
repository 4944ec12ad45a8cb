/** The package version; a test keeps it equal to package.json's. */
export const VERSION = "0.1.0";

/** The fixed product token every request carries. */
export const USER_AGENT = `wh/${VERSION}`;
