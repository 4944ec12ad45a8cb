import { type Sample, type SpecFields, trackSample } from "./types.js";

/**
 * Segment's Native Mobile Spec (segment-docs src/connections/spec/mobile.md): the application
 * lifecycle and campaign events' properties with their types.
 */
export const MOBILE_FIELDS: SpecFields = {
  version: "string",
  build: "string",
  from_background: "boolean",
  referring_application: "string",
  url: "string",
  previous_version: "string",
  previous_build: "string",
  provider: "string",
  campaign: "object",
};

/** The app, device and OS a mobile SDK puts in every message's context (strings, as screen's checked fields are). */
export const MOBILE_CONTEXT = {
  app: { name: "Trailhead", version: "4.2.0", build: "4200" },
  device: { manufacturer: "Apple", model: "iPhone15,3", type: "ios" },
  os: { name: "iOS", version: "18.1" },
  library: { name: "analytics-swift", version: "1.6.1" },
} as const;

const sample = (event: string, properties: Record<string, unknown>): Sample =>
  trackSample("mobile", MOBILE_FIELDS, event, properties, { context: MOBILE_CONTEXT });

const APP = { version: MOBILE_CONTEXT.app.version, build: MOBILE_CONTEXT.app.build };
const CAMPAIGN = { name: "Autumn boots", source: "Newsletter", medium: "push", content: "boots-hero" };

export const MOBILE_SAMPLES: readonly Sample[] = [
  sample("Application Installed", APP),
  sample("Application Opened", { ...APP, from_background: false, referring_application: "com.example.mail", url: "trailhead://deals/autumn" }),
  sample("Application Backgrounded", {}),
  sample("Application Foregrounded", APP),
  sample("Application Updated", { ...APP, previous_version: "4.1.3", previous_build: "4130" }),
  sample("Application Uninstalled", {}),
  sample("Application Crashed", {}),
  sample("Install Attributed", { provider: "Tapstream", campaign: { ...CAMPAIGN, medium: "cpc", ad_group: "boots-uk", ad_creative: "video-15s" } }),
  sample("Push Notification Received", { campaign: CAMPAIGN }),
  sample("Push Notification Tapped", { campaign: CAMPAIGN }),
  sample("Deep Link Opened", { provider: "Branch", url: "trailhead://p/p-1001" }),
];
