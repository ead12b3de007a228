/**
 * A tool's return as parts, where it holds images: Letta's return parts (`ToolReturn.tool_return` as a
 * list of TextContent and ImageContent). An MCP tool's image content and a client tool's image parts
 * become such parts; the model reads them where its API takes images in a tool's result (Anthropic),
 * and their text form elsewhere (Chat Completions), as Letta does. A return without an image stays
 * text.
 */

/** An image in a tool's return, its bytes inline: Letta's ImageContent with a base64 source. */
export interface ReturnImage {
  type: 'image';
  source: { type: 'base64'; media_type: string; data: string };
}

export type ReturnPart = { type: 'text'; text: string } | ReturnImage;

/** The largest image a return gives the model unless TOOL_RETURN_IMAGE_MAX_BYTES says otherwise. */
export const DEFAULT_IMAGE_MAX_BYTES = 5 * 1024 * 1024;

/** The image types every model API here takes, by the bytes their files begin with. */
const MODEL_IMAGE_TYPES: [string, (head: Buffer) => boolean][] = [
  ['image/png', (head) => head.subarray(0, 8).equals(Buffer.from('89504e470d0a1a0a', 'hex'))],
  ['image/jpeg', (head) => head.subarray(0, 3).equals(Buffer.from('ffd8ff', 'hex'))],
  ['image/gif', (head) => /^GIF8[79]a/.test(head.subarray(0, 6).toString('latin1'))],
  [
    'image/webp',
    (head) => head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WEBP',
  ],
];

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The type of an image a model can read, from its bytes: a model's API refuses an image whose bytes
 * are not of its type, at every later step whose transcript holds it.
 */
function readableType(data: string): string | undefined {
  if (data.length % 4 !== 0 || !BASE64.test(data)) return undefined;
  const head = Buffer.from(data.slice(0, 16), 'base64');
  return MODEL_IMAGE_TYPES.find(([, starts]) => starts(head))?.[0];
}

/** How many bytes base64 text decodes to. */
export const base64Bytes = (data: string) =>
  Math.floor((data.length * 3) / 4) - (data.match(/=*$/)?.[0].length ?? 0);

/** A line standing for bytes the model is not shown. */
export const notShown = (what: string, mediaType: string, data: string) =>
  `[${what} ${mediaType}, ${base64Bytes(data)} bytes, not shown]`;

/**
 * An image as a part the model can read: base64 of a type model APIs take (by its bytes, whatever
 * `mediaType` says); otherwise a line saying what it was. Its size is held to a limit by `limitImages`.
 */
export function imagePart(mediaType: string, data: string): ReturnPart {
  const type = readableType(data);
  if (type) return { type: 'image', source: { type: 'base64', media_type: type, data } };
  return { type: 'text', text: notShown('image', mediaType, data) };
}

/** Letta's `tool_return_to_text`: the text parts, a line each, then a note of the images left out. */
export function partsText(parts: ReturnPart[]): string {
  const text = parts.flatMap((part) => (part.type === 'text' && part.text ? [part.text] : [])).join('\n');
  const images = parts.filter((part) => part.type === 'image').length;
  const note = images === 0 ? '' : images === 1 ? '[Image omitted]' : `[${images} images omitted]`;
  return [text, note].filter(Boolean).join(' ');
}

/** A return's text, and its parts when it holds an image (else its text is all of it). */
export function returnOfParts(parts: ReturnPart[]): { text: string; parts?: ReturnPart[] } {
  if (!parts.some((part) => part.type === 'image'))
    return { text: parts.map((part) => (part.type === 'text' ? part.text : '')).join('\n') };
  return { text: partsText(parts), parts };
}

/** A part held to `maxBytes`: an image larger than that becomes a line saying what it was. */
export const limitImage = (part: ReturnPart, maxBytes: number): ReturnPart =>
  part.type === 'image' && base64Bytes(part.source.data) > maxBytes
    ? { type: 'text', text: notShown('image', part.source.media_type, part.source.data) }
    : part;

/** A return with its images held to `maxBytes` (limitImage). */
export function limitImages<T extends { text: string; parts?: ReturnPart[] }>(ret: T, maxBytes: number): T {
  if (!ret.parts) return ret;
  const { parts, ...rest } = ret;
  return { ...rest, ...returnOfParts(parts.map((part) => limitImage(part, maxBytes))) } as T;
}
