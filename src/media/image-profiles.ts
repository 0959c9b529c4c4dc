/**
 * What an image model accepts, as data: sizes, images per request, quality levels and what each quality costs
 * relative to the catalog's per-image price. Matched on the upstream's model id; models without a profile of
 * their own get DEFAULT_PROFILE. (These facts belong with the catalog seeds once those carry image capabilities.)
 *
 * Pricing rule (documented in docs/media.md): the catalog's per-image price is for one image of up to one
 * megapixel (1024x1024) at the model's standard quality. An image is charged
 *   price × max(1, width × height / 1024²) × quality factor,
 * so larger images cost in proportion to their pixels and smaller ones cost a full image (providers price small
 * sizes close to the 1024² price: DALL·E 2 charges $0.016 for 256x256 against $0.020 for 1024x1024).
 */

export interface ImageProfile {
  name: string;
  /** Allowed `WxH` sizes; absent: any size whose sides are within [minSide, maxSide]. */
  sizes?: string[];
  minSide: number;
  maxSide: number;
  maxN: number;
  /** Accepted quality levels and their price factors. */
  qualities: Record<string, number>;
  /** The quality used when the request names none (a key of `qualities`). */
  defaultQuality: string;
  /** Send `quality` upstream (false: every accepted level means "the model's default"). */
  forwardQuality: boolean;
  /** Send `response_format` upstream (GPT image models refuse it and always answer base64). */
  forwardResponseFormat: boolean;
}

const OPENAI_BASE = { minSide: 256, maxSide: 1792, forwardQuality: true, forwardResponseFormat: true };

export const DEFAULT_PROFILE: ImageProfile = {
  name: 'default', minSide: 64, maxSide: 2048, maxN: 4, qualities: { standard: 1, auto: 1 }, defaultQuality: 'standard',
  forwardQuality: false, forwardResponseFormat: true,
};

const PROFILES: Array<{ match: RegExp; profile: ImageProfile }> = [
  { match: /(^|\/)dall-e-2$/, profile: { ...OPENAI_BASE, name: 'dall-e-2', sizes: ['256x256', '512x512', '1024x1024'], maxN: 10, qualities: { standard: 1 }, defaultQuality: 'standard' } },
  { match: /(^|\/)dall-e-3$/, profile: { ...OPENAI_BASE, name: 'dall-e-3', sizes: ['1024x1024', '1792x1024', '1024x1792'], maxN: 1, qualities: { standard: 1, hd: 2 }, defaultQuality: 'standard' } },
  {
    // OpenAI's list prices at 1024x1024: low $0.011, medium $0.042, high $0.167 — about ¼, 1 and 4 × medium.
    match: /(^|\/)(gpt-image|chatgpt-image)/,
    profile: { ...OPENAI_BASE, name: 'gpt-image', sizes: ['1024x1024', '1536x1024', '1024x1536'], maxN: 10, qualities: { low: 0.25, medium: 1, high: 4, auto: 4 }, defaultQuality: 'auto', forwardResponseFormat: false },
  },
];

export function imageProfile(upstreamModel: string): ImageProfile {
  return PROFILES.find((p) => p.match.test(upstreamModel))?.profile ?? DEFAULT_PROFILE;
}

/** Why `size`/`n`/`quality` do not fit the profile, or null when they do. */
export function profileProblem(p: ImageProfile, width: number, height: number, n: number, quality: string): { param: string; msg: string } | null {
  const size = `${width}x${height}`;
  if (p.sizes && !p.sizes.includes(size)) return { param: 'size', msg: `size ${size} is not supported by this model; supported sizes: ${p.sizes.join(', ')}` };
  if (!p.sizes && [width, height].some((s) => s < p.minSide || s > p.maxSide)) {
    return { param: 'size', msg: `size ${size} is not supported by this model; width and height must be between ${p.minSide} and ${p.maxSide}` };
  }
  if (n > p.maxN) return { param: 'n', msg: `this model makes at most ${p.maxN} image${p.maxN === 1 ? '' : 's'} per request (n=${n})` };
  if (!(quality in p.qualities)) return { param: 'quality', msg: `quality '${quality}' is not supported by this model; supported: ${Object.keys(p.qualities).join(', ')}` };
  return null;
}

/** The charge for one image in USD, before markup (see the rule above). */
export function imagePriceUsd(perImage: number, p: ImageProfile, width: number, height: number, quality: string): number {
  return perImage * Math.max(1, (width * height) / (1024 * 1024)) * (p.qualities[quality] ?? 1);
}
