/** Images in tool returns (src/returns/return-parts.ts): only what a model's API will read becomes an image part. */
import { imagePart, limitImage, limitImages, partsText, returnOfParts } from '../src/returns/return-parts';

const b64 = (hex: string, rest = 'rest of the file') =>
  Buffer.concat([Buffer.from(hex, 'hex'), Buffer.from(rest)]).toString('base64');
const webp = Buffer.from('RIFF\0\0\0\0WEBPVP8 ').toString('base64');

describe('imagePart', () => {
  it.each([
    ['image/png', b64('89504e470d0a1a0a')],
    ['image/jpeg', b64('ffd8ffe0')],
    ['image/gif', Buffer.from('GIF89a....').toString('base64')],
    ['image/webp', webp],
  ])('takes %s by its bytes', (type, data) => {
    expect(imagePart(type, data)).toEqual({
      type: 'image',
      source: { type: 'base64', media_type: type, data },
    });
  });

  it('names the type its bytes have, whatever the declared one', () => {
    const data = b64('89504e470d0a1a0a');
    expect(imagePart('image/jpeg', data)).toMatchObject({ source: { media_type: 'image/png' } });
  });

  it('describes what no model reads: other types, bytes of no image, text that is not base64, and past the limit', () => {
    const line = (type: string, data: string, max = Infinity) => limitImage(imagePart(type, data), max);
    expect(line('image/svg+xml', Buffer.from('<svg/>').toString('base64'))).toEqual({
      type: 'text',
      text: '[image image/svg+xml, 6 bytes, not shown]',
    });
    expect(line('image/png', Buffer.from('plain').toString('base64')).type).toBe('text');
    expect(line('image/png', '%%not base64%%').type).toBe('text');
    const png = b64('89504e470d0a1a0a');
    expect(line('image/png', png, 10)).toEqual({
      type: 'text',
      text: '[image image/png, 24 bytes, not shown]',
    });
  });
});

describe('return parts', () => {
  const image = imagePart('image/png', b64('89504e470d0a1a0a'));

  it("are text alone without an image, and Letta's text form with one", () => {
    expect(
      returnOfParts([
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ]),
    ).toEqual({ text: 'a\nb' });
    const parts = [{ type: 'text' as const, text: 'a' }, image];
    expect(returnOfParts(parts)).toEqual({ text: 'a [Image omitted]', parts });
    expect(partsText([image, image])).toBe('[2 images omitted]');
  });

  it('hold images to a limit afterwards', () => {
    const limited = limitImages({ status: 'success', ...returnOfParts([image]) }, 1);
    expect(limited).toEqual({ status: 'success', text: '[image image/png, 24 bytes, not shown]' });
  });
});
