/**
 * The one address policy for URLs a model or a tool argument chooses: such a URL may reach only
 * globally reachable addresses, never the server's own loopback, its private networks, or the cloud
 * metadata service at 169.254.169.254, unless the operator's allow-list (OUTBOUND_ALLOW_PRIVATE) names
 * the host or range. The ranges are those IANA's special-purpose address registries mark as not
 * globally reachable, and all IPv6 outside 2000::/3; node:net's BlockList matches them, IPv4-mapped
 * IPv6 (::ffff:a.b.c.d) included.
 */
import { BlockList, isIP } from 'node:net';

const familyOf = (address: string) => (isIP(address) === 6 ? 'ipv6' : 'ipv4');

function blockList(cidrs: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [address, prefix] = cidr.split('/');
    list.addSubnet(address, Number(prefix), familyOf(address));
  }
  return list;
}

/** Each kind of refused range, named as the refusal names it. */
const REFUSED: { kind: string; list: BlockList }[] = Object.entries({
  unspecified: ['0.0.0.0/8', '::/128'],
  loopback: ['127.0.0.0/8', '::1/128'],
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'],
  'carrier-grade NAT': ['100.64.0.0/10'],
  'link-local': ['169.254.0.0/16', 'fe80::/10'],
  'unique-local': ['fc00::/7'],
  multicast: ['224.0.0.0/4', 'ff00::/8'],
  // Protocol assignments, documentation, benchmarking, the deprecated 6to4 relay and Teredo, and the
  // rest of 240/4 with the broadcast address: nothing a web page lives on.
  reserved: [
    '192.0.0.0/24',
    '192.0.2.0/24',
    '192.88.99.0/24',
    '198.18.0.0/15',
    '198.51.100.0/24',
    '203.0.113.0/24',
    '240.0.0.0/4',
    '2001::/23',
    '2001:db8::/32',
    '3fff::/20',
  ],
}).map(([kind, cidrs]) => ({ kind, list: blockList(cidrs) }));

/** All IPv6 unicast on the internet is in 2000::/3; what lies outside and is not refused above is reserved. */
const GLOBAL_UNICAST = blockList(['2000::/3']);

/**
 * Prefixes whose addresses carry an IPv4 address, judged as that IPv4 address: IPv4-mapped, NAT64
 * (DNS64 answers an IPv4-only name with one, so it is checked, not refused) and 6to4.
 */
const MAPPED = blockList(['::ffff:0:0/96']);
const NAT64 = blockList(['64:ff9b::/96']);
const SIX_TO_FOUR = blockList(['2002::/16']);

/** The eight 16-bit groups of an IPv6 address, from the URL parser's canonical hex spelling of it. */
function ipv6Groups(address: string): number[] {
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const [head, tail] = canonical.split('::');
  const groups = (part?: string) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const [left, right] = [groups(head), groups(tail)];
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

const ipv4Of = (high: number, low: number) => [high >> 8, high & 255, low >> 8, low & 255].join('.');

function embeddedIpv4(address: string): string | undefined {
  const groups = ipv6Groups(address);
  if (MAPPED.check(address, 'ipv6') || NAT64.check(address, 'ipv6')) return ipv4Of(groups[6], groups[7]);
  if (SIX_TO_FOUR.check(address, 'ipv6')) return ipv4Of(groups[1], groups[2]);
  return undefined;
}

/** The kind of refused range `address` (a valid IP address) lies in, or undefined if it is public. */
export function refusedKind(address: string): string | undefined {
  const family = familyOf(address);
  const refused = REFUSED.find(({ list }) => list.check(address, family));
  if (refused) return refused.kind;
  if (family === 'ipv4') return undefined;
  const inner = embeddedIpv4(address);
  if (inner) return refusedKind(inner);
  return GLOBAL_UNICAST.check(address, 'ipv6') ? undefined : 'reserved';
}

/** OUTBOUND_ALLOW_PRIVATE: host names, addresses and ranges that may be reached although private. */
export interface PrivateAllowList {
  hosts: ReadonlySet<string>;
  addresses: BlockList;
}

export const NO_PRIVATE_ADDRESSES: PrivateAllowList = { hosts: new Set(), addresses: new BlockList() };

const bits = { ipv4: 32, ipv6: 128 };
/** An IPv6 URL host (`[::1]`) as an address (`::1`). */
export const withoutBrackets = (host: string) => host.replace(/^\[(.*)\]$/, '$1');
/** `example.com.` is `example.com`: one name, one decision. */
const hostKey = (host: string) => host.toLowerCase().replace(/\.$/, '');

/**
 * Parses a comma-separated list of host names (`intranet.example`), addresses (`127.0.0.1`, `::1`)
 * and CIDR ranges (`10.0.0.0/8`, `fd00::/8`); throws an Error naming the first entry that is none.
 */
export function parseAllowList(text: string): PrivateAllowList {
  const hosts = new Set<string>();
  const addresses = new BlockList();
  for (const entry of text.split(',').map((e) => e.trim())) {
    if (!entry) continue;
    const [address, prefix, extra] = withoutBrackets(entry).split('/');
    const family = familyOf(address);
    if (isIP(address) && prefix === undefined) addresses.addAddress(address, family);
    else if (isIP(address) && /^\d+$/.test(prefix) && extra === undefined && Number(prefix) <= bits[family])
      addresses.addSubnet(address, Number(prefix), family);
    else if (prefix === undefined && /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?\.?$/i.test(address))
      hosts.add(hostKey(address));
    else throw new Error(`${JSON.stringify(entry)} is not a host name, an IP address or a CIDR range`);
  }
  return { hosts, addresses };
}

/**
 * Why `host`, resolved to `address`, may not be reached, in words the model reads; undefined if it
 * may. `host` is the URL's host name, which is `address` itself for an IP address URL.
 */
/** The allow-list with one more host allowed (an address the operator chose, as an MCP server's). */
export const withHostAllowed = (allow: PrivateAllowList, host: string): PrivateAllowList => ({
  hosts: new Set([...allow.hosts, hostKey(withoutBrackets(host))]),
  addresses: allow.addresses,
});

export function refusal(host: string, address: string, allow: PrivateAllowList): string | undefined {
  const name = withoutBrackets(host);
  if (allow.hosts.has(hostKey(name))) return undefined;
  const bare = address.replace(/%.*$/, ''); // a scoped address's zone (fe80::1%eth0) says only where
  if (!isIP(bare)) return `${name} resolves to ${JSON.stringify(address)}, which is not an IP address`;
  const kind = refusedKind(bare);
  if (!kind || allow.addresses.check(bare, familyOf(bare))) return undefined;
  const what =
    name === bare
      ? `${name} is a private address (${kind})`
      : `${name} resolves to a private address (${bare}, ${kind})`;
  return `${what}, which the server may not fetch`;
}
