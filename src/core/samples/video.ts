import { type Sample, type SpecFields, trackSample } from "./types.js";

/**
 * Segment's Video Spec (segment-docs src/connections/spec/video.md): the playback, content and
 * ad events' properties with their types. The playback's session_id ties a viewing together.
 */
const PLAYBACK_FIELDS: SpecFields = {
  session_id: "string",
  content_asset_id: "string",
  content_pod_id: "string",
  ad_asset_id: "string",
  ad_pod_id: "string",
  ad_type: "string",
  position: "integer",
  total_length: "integer",
  bitrate: "integer",
  framerate: "number",
  video_player: "string",
  sound: "integer",
  full_screen: "boolean",
  ad_enabled: "boolean",
  quality: "string",
  livestream: "boolean",
  seek_position: "integer",
};

const CONTENT_FIELDS: SpecFields = {
  session_id: "string",
  asset_id: "string",
  pod_id: "string",
  program: "string",
  title: "string",
  description: "string",
  season: "string",
  episode: "string",
  genre: "string",
  publisher: "string",
  position: "integer",
  total_length: "integer",
  channel: "string",
  full_episode: "boolean",
  livestream: "boolean",
  airdate: "date",
  bitrate: "integer",
  framerate: "number",
  keywords: "array",
};

const AD_FIELDS: SpecFields = {
  session_id: "string",
  asset_id: "string",
  pod_id: "string",
  type: "string",
  title: "string",
  publisher: "string",
  position: "integer",
  total_length: "integer",
};

/** Every property the Video Spec documents, across its three kinds of event. */
export const VIDEO_FIELDS: SpecFields = { ...PLAYBACK_FIELDS, ...CONTENT_FIELDS, ...AD_FIELDS };

const SESSION = "vs-2c71d9e0";
const PLAYER = {
  session_id: SESSION,
  content_asset_id: "ep-0412",
  content_pod_id: "pod-main",
  total_length: 1560,
  bitrate: 4800,
  framerate: 29.97,
  video_player: "html5",
  sound: 70,
  full_screen: false,
  ad_enabled: true,
  quality: "hd1080",
  livestream: false,
};
const CONTENT = {
  session_id: SESSION,
  asset_id: "ep-0412",
  pod_id: "pod-main",
  program: "Rivers of the North",
  title: "The Meltwater Season",
  description: "Glacial rivers swell as spring arrives in the far north.",
  season: "2",
  episode: "4",
  genre: "Documentary",
  publisher: "Tidewater Films",
  total_length: 1560,
  channel: "Nature",
  full_episode: true,
  livestream: false,
  airdate: "2026-03-14",
  keywords: ["rivers", "glaciers", "spring"],
};
const AD = { session_id: SESSION, asset_id: "ad-771", pod_id: "pod-pre", type: "pre-roll", title: "Trail Runner 3", publisher: "Northpeak", total_length: 15 };

const playback = (event: string, extra: Record<string, unknown> = {}): Sample => trackSample("video", PLAYBACK_FIELDS, event, { ...PLAYER, ...extra });
const content = (event: string, position: number): Sample => trackSample("video", CONTENT_FIELDS, event, { ...CONTENT, position });
const ad = (event: string, position: number): Sample => trackSample("video", AD_FIELDS, event, { ...AD, position });

export const VIDEO_SAMPLES: readonly Sample[] = [
  playback("Video Playback Started", { position: 0 }),
  playback("Video Playback Paused", { position: 412 }),
  playback("Video Playback Interrupted", { position: 415 }),
  playback("Video Playback Buffer Started", { position: 418 }),
  playback("Video Playback Buffer Completed", { position: 418 }),
  playback("Video Playback Seek Started", { position: 418, seek_position: 900 }),
  playback("Video Playback Seek Completed", { position: 900 }),
  playback("Video Playback Resumed", { position: 900 }),
  playback("Video Playback Completed", { position: 1560 }),
  ad("Video Ad Started", 0),
  ad("Video Ad Playing", 10),
  ad("Video Ad Completed", 15),
  content("Video Content Started", 0),
  content("Video Content Playing", 10),
  content("Video Content Completed", 1560),
];
