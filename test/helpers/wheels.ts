/**
 * Pure-Python wheels and PEP 503 indexes written on the spot, so that tests install packages without
 * any network: pip never goes to PyPI. A wheel is a zip with the package, METADATA, WHEEL and a
 * RECORD of sha256 hashes; the zip is written uncompressed ("stored"), which pip reads as any other.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export interface WheelSpec {
  /** The distribution's name; its import package is the name with `-` as `_`. */
  name: string;
  version: string;
  /** `Requires-Dist` lines, e.g. `tinyslug>=1.0`. */
  requires?: string[];
}

/** Writes the wheel into `dir`; the package's `VERSION` is the wheel's version. Returns its path. */
export function writeWheel(dir: string, spec: WheelSpec): string {
  const module = spec.name.replace(/-/g, '_');
  const distInfo = `${module}-${spec.version}.dist-info`;
  const files: [string, string][] = [
    [`${module}/__init__.py`, `VERSION = ${JSON.stringify(spec.version)}\n`],
    [
      `${distInfo}/METADATA`,
      ['Metadata-Version: 2.1', `Name: ${spec.name}`, `Version: ${spec.version}`]
        .concat((spec.requires ?? []).map((requirement) => `Requires-Dist: ${requirement}`))
        .join('\n') + '\n',
    ],
    [
      `${distInfo}/WHEEL`,
      'Wheel-Version: 1.0\nGenerator: letta-temporal-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
    ],
  ];
  const record = files
    .map(([name, text]) => `${name},sha256=${sha256(text)},${Buffer.byteLength(text)}\n`)
    .join('');
  files.push([`${distInfo}/RECORD`, `${record}${distInfo}/RECORD,,\n`]);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${module}-${spec.version}-py3-none-any.whl`);
  fs.writeFileSync(file, storedZip(files));
  return file;
}

/**
 * A PEP 503 "simple" index over `wheels`: `<root>/<normalized name>/index.html` linking to each
 * project's files. Returns its `file://` URL, for `--index-url`.
 */
export function writeSimpleIndex(root: string, wheels: string[]): string {
  const byProject = new Map<string, string[]>();
  for (const wheel of wheels) {
    const project = path
      .basename(wheel)
      .split('-')[0]!
      .toLowerCase()
      .replace(/[-_.]+/g, '-');
    byProject.set(project, [...(byProject.get(project) ?? []), wheel]);
  }
  for (const [project, files] of byProject) {
    const links = files.map((file) => `<a href="${pathToFileURL(file).href}">${path.basename(file)}</a>`);
    fs.mkdirSync(path.join(root, project), { recursive: true });
    fs.writeFileSync(path.join(root, project, 'index.html'), `<!DOCTYPE html>\n${links.join('<br>\n')}\n`);
  }
  return pathToFileURL(root).href;
}

/** The unpadded urlsafe base64 digest a RECORD holds. */
const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url');

/** A zip archive of `files`, uncompressed, dated 1980-01-01. */
function storedZip(files: [string, string][]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of files) {
    const nameBytes = Buffer.from(name, 'utf8');
    const data = Buffer.from(text, 'utf8');
    // version needed, flags, method (0: stored), time, date, crc-32, sizes, name length, extra length
    const common = Buffer.alloc(26);
    common.writeUInt16LE(20, 0);
    common.writeUInt16LE(0, 2);
    common.writeUInt16LE(0, 4);
    common.writeUInt16LE(0, 6);
    common.writeUInt16LE((1 << 5) | 1, 8);
    common.writeUInt32LE(crc32(data), 10);
    common.writeUInt32LE(data.length, 14);
    common.writeUInt32LE(data.length, 18);
    common.writeUInt16LE(nameBytes.length, 22);
    common.writeUInt16LE(0, 24);
    const local = Buffer.concat([uint32(0x04034b50), common, nameBytes, data]);
    // version made by, then the common fields, then comment length, disk, attributes and offset
    const central = Buffer.concat([uint32(0x02014b50), uint16(20), common, Buffer.alloc(14), nameBytes]);
    central.writeUInt32LE(offset, 42);
    locals.push(local);
    centrals.push(central);
    offset += local.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const uint32 = (value: number) => {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32LE(value);
  return buffer;
};

const uint16 = (value: number) => {
  const buffer = Buffer.alloc(2);
  buffer.writeUInt16LE(value);
  return buffer;
};

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
