import { Problem } from '../../platform/problem.js';

/*
 * The identity's picture (migration 0030, issue 46 item 3): what a person uploads is never what is
 * served. The bytes are decoded by their content (the declared Content-Type is only a request to
 * be read as an image: a JPEG sent as image/png is a JPEG, a text file sent as image/png is
 * refused), turned upright by their EXIF orientation, cropped to a square, and re-encoded as a new
 * WebP file without any metadata (no EXIF, GPS, XMP, ICC comment or trailing bytes), so a served
 * picture cannot be a polyglot file, carry a script or tell where it was taken
 * (docs/security.md, "Profile pictures").
 */

/** The media types PUT /account/picture takes; what they declare is not trusted. */
export const PICTURE_UPLOAD_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;

/** The largest upload, in bytes: larger is 413 request.body_too_large before any decoding. */
export const PICTURE_UPLOAD_LIMIT = 5 * 1024 * 1024;

/** The side of the square picture kept and served, in pixels. */
export const PICTURE_SIZE = 256;

/**
 * The most pixels an upload may have (width × height, about 40 megapixels: a phone camera's photo
 * passes, a decompression bomb with a tiny file and a huge canvas is refused before it is decoded).
 */
export const PICTURE_MAX_PIXELS = 40_000_000;

/** The decoders a picture may come from, by content (libvips' own names). Never SVG, TIFF, HEIF. */
const ACCEPTED_FORMATS = new Set(['png', 'jpeg', 'webp', 'gif']);

/** What is stored and served: always the service's own encoding. */
export interface ProcessedPicture {
  bytes: Buffer;
  contentType: 'image/webp';
}

/**
 * The picture to keep from an upload's bytes, or 422 identity.picture_unusable when they are not a
 * PNG, JPEG, WebP or GIF image (by content), are too large a canvas, or do not decode. Only the
 * first frame of an animation is kept.
 */
export async function processPicture(upload: Buffer): Promise<ProcessedPicture> {
  // Loaded at the first upload, not at start-up: libvips costs every process ~40 ms to load, and
  // most never see a picture (each test file builds the app; a CLI command never does).
  const { default: sharp } = await import('sharp');
  const options = { limitInputPixels: PICTURE_MAX_PIXELS, failOn: 'error', animated: false } as const;
  try {
    const meta = await sharp(upload, options).metadata();
    if (!meta.format || !ACCEPTED_FORMATS.has(meta.format)) throw new Problem('identity.picture_unusable');
    if (!meta.width || !meta.height || meta.width * meta.height > PICTURE_MAX_PIXELS) {
      throw new Problem('identity.picture_unusable');
    }
    // rotate() without an angle applies the EXIF orientation; sharp writes no metadata unless
    // asked (withMetadata / keepExif are never called), so the output holds the pixels alone.
    const bytes = await sharp(upload, options)
      .rotate()
      .resize(PICTURE_SIZE, PICTURE_SIZE, { fit: 'cover', position: 'attention' })
      .webp({ quality: 82, effort: 4 })
      .toBuffer();
    return { bytes, contentType: 'image/webp' };
  } catch (error) {
    if (error instanceof Problem) throw error;
    // libvips' refusals (unsupported or corrupt input, the pixel limit) are the upload's fault.
    throw new Problem('identity.picture_unusable');
  }
}

/** The public address of a picture: on PUBLIC_ORIGIN, new with every upload. */
export function pictureUrl(publicOrigin: string, pictureId: string): string {
  return `${publicOrigin.replace(/\/+$/, '')}/api/v1/pictures/${pictureId}`;
}
