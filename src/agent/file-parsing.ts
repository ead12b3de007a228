/**
 * A file's text and chunks, as Letta's file processor makes them: PDF through unpdf (PDF.js), HTML
 * through html-to-text, everything else as UTF-8 text; then chunks of about `embedding_chunk_size`
 * tokens with some overlap (Letta's LlamaIndex SentenceSplitter: sentences packed into chunks; code
 * and structured data by lines). Pure functions: the same text always gives the same chunks.
 */
import { convert } from 'html-to-text';
import { chunkingStrategyOf, type ChunkingStrategy } from './file-types';

/** A file that cannot be read as its type says (a broken PDF, bytes that are not UTF-8 text). */
export class FileParseError extends Error {
  override name = 'FileParseError';
}

/** Letta counts chunk sizes in tokens; about four characters make one. */
export const CHARS_PER_TOKEN = 4;

async function pdfText(bytes: Uint8Array): Promise<string> {
  const { extractText, getDocumentProxy } = await import('unpdf');
  let pages: string[];
  try {
    // verbosity 0: PDF.js's warnings about a damaged file would go to the console, not the log.
    const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    try {
      ({ text: pages } = await extractText(pdf, { mergePages: false }));
    } finally {
      await pdf.destroy();
    }
  } catch (error) {
    throw new FileParseError(`Could not read the PDF: ${(error as Error).message}`);
  }
  return pages.map((page) => page.trim()).join('\n\n');
}

function utf8Text(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new FileParseError('The file is not UTF-8 text');
  }
}

/** The text of a file of a supported media type (src/agent/file-types.ts). */
export async function parseFile(bytes: Uint8Array, mime: string | null): Promise<string> {
  if (mime === 'application/pdf') return pdfText(bytes);
  const text = utf8Text(bytes);
  // PostgreSQL cannot store NUL characters in text.
  if (text.includes('\u0000')) throw new FileParseError('The file holds NUL characters: it is not text');
  if (mime === 'text/html') return convert(text, { wordwrap: false });
  return text;
}

export interface ChunkOptions {
  /** Tokens per chunk (Letta's `embedding_chunk_size`). */
  chunkSize: number;
  /** Tokens a chunk repeats of the one before. */
  overlap: number;
}

/** Pieces of text no longer than `max` characters: words, and words cut where they are too long. */
function cutToFit(unit: string, max: number): string[] {
  if (unit.length <= max) return [unit];
  const pieces: string[] = [];
  for (const word of unit.match(/\S+\s*/g) ?? []) {
    for (let at = 0; at < word.length; at += max) pieces.push(word.slice(at, at + max));
  }
  return pieces;
}

/** The units chunks are packed from, each with the separator that follows it. */
function unitsOf(text: string, strategy: ChunkingStrategy): string[] {
  if (strategy === 'code' || strategy === 'structured_data')
    return (text.match(/[^\n]*\n|[^\n]+$/g) ?? []).filter((line) => line.trim());
  const units: string[] = [];
  for (const paragraph of text.split(/\n\s*\n/)) {
    if (!paragraph.trim()) continue;
    const sentences = paragraph.trim().split(/(?<=[.!?])\s+/);
    sentences.forEach((sentence, i) => units.push(sentence + (i === sentences.length - 1 ? '\n\n' : ' ')));
  }
  return units;
}

/**
 * The chunks of a file's text: its sentences (or lines, for code and data) packed in order into chunks
 * of at most `chunkSize` tokens, each starting with up to `overlap` tokens of the one before.
 */
export function chunkText(text: string, mime: string | null, options: ChunkOptions): string[] {
  const max = Math.max(1, Math.floor(options.chunkSize * CHARS_PER_TOKEN));
  const overlapChars = Math.min(Math.floor(options.overlap * CHARS_PER_TOKEN), Math.floor(max / 2));
  const units = unitsOf(text.replace(/\r\n?/g, '\n'), chunkingStrategyOf(mime)).flatMap((unit) =>
    cutToFit(unit, max),
  );
  const chunks: string[] = [];
  let current: string[] = [];
  let length = 0;
  const emit = () => {
    const chunk = current.join('').trim();
    if (chunk) chunks.push(chunk);
    // The next chunk starts with the last units of this one, up to the overlap.
    const carried: string[] = [];
    let carriedLength = 0;
    for (let i = current.length - 1; i > 0; i--) {
      if (carriedLength + current[i].length > overlapChars) break;
      carried.unshift(current[i]);
      carriedLength += current[i].length;
    }
    current = carried;
    length = carriedLength;
  };
  // Whether `current` holds units no chunk has yet.
  let unsent = false;
  for (const unit of units) {
    if (unsent && length + unit.length > max) {
      emit();
      unsent = false;
    }
    // What was carried over does not leave room for the unit: give up some of it.
    while (current.length && length + unit.length > max) length -= current.shift()!.length;
    current.push(unit);
    length += unit.length;
    unsent = true;
  }
  if (unsent) emit();
  return chunks;
}
