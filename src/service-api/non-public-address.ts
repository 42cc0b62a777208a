/**
 * Which IP literals a webhook may not point at: everything that is not a public unicast address
 * (private, loopback, link-local, unspecified, multicast, shared, documentation, benchmarking and
 * reserved ranges), in IPv4 and IPv6, including IPv6 forms that carry an IPv4 address
 * (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:AABB:CCDD::`).
 *
 * Input is a host as the WHATWG URL parser leaves it (`URL.hostname`): it has already turned
 * every IPv4 spelling (decimal `2130706433`, hex `0x7f.1`, octal `0177.0.0.1`, short `127.1`,
 * full-width digits, percent-encoding) into a dotted quad, and IPv6 into `[compressed hex]`.
 */
export interface NonPublicAddress {
  /** The address as the parser normalised it (no brackets). */
  address: string;
  /** The range it falls in, in CIDR notation. */
  range: string;
  /** What the range is, for people: "loopback", "private (RFC 1918)". */
  label: string;
  /** For IPv6 forms that carry an IPv4 address: that address (the one actually judged). */
  embeds?: string;
}

type Range4 = readonly [base: string, bits: number, label: string];
type Range6 = readonly [base: string, bits: number, label: string];

const IPV4_RANGES: readonly Range4[] = [
  ['0.0.0.0', 8, 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'private (RFC 1918)'],
  ['100.64.0.0', 10, 'shared address space (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private (RFC 1918)'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation (TEST-NET-1)'],
  ['192.88.99.0', 24, 'reserved (former 6to4 relay anycast)'],
  ['192.168.0.0', 16, 'private (RFC 1918)'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation (TEST-NET-2)'],
  ['203.0.113.0', 24, 'documentation (TEST-NET-3)'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved (including broadcast)'],
];

/**
 * Checked in order; the first match wins, so a narrower range comes before a wider one that
 * contains it (`64:ff9b:1::/48` lies inside `::/8`). Forms that carry IPv4 are handled first.
 */
const IPV6_RANGES: readonly Range6[] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::', 96, 'IPv4-compatible (deprecated, not routable)'],
  ['64:ff9b:1::', 48, 'local-use NAT64'],
  ['::', 8, 'reserved'],
  ['100::', 64, 'discard-only'],
  ['2001::', 32, 'Teredo tunnelling'],
  ['2001:2::', 48, 'benchmarking'],
  ['2001:10::', 28, 'ORCHID (not routable)'],
  ['2001:20::', 28, 'ORCHIDv2 (not routable)'],
  ['2001:db8::', 32, 'documentation'],
  ['3fff::', 20, 'documentation'],
  ['fc00::', 7, 'unique local (private)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local (deprecated)'],
  ['ff00::', 8, 'multicast'],
];

/** IPv6 prefixes whose address carries an IPv4 address at `offset` (bytes), judged as IPv4. */
const IPV4_CARRIERS: readonly [base: string, bits: number, offset: number, label: string][] = [
  ['::ffff:0:0', 96, 12, 'IPv4-mapped'],
  ['64:ff9b::', 96, 12, 'NAT64'],
  ['2002::', 16, 2, '6to4'],
];

const DOTTED_QUAD = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** Parses a dotted quad (each part 0–255) to 4 bytes; null otherwise. */
export function parseIpv4(text: string): Uint8Array | null {
  const m = DOTTED_QUAD.exec(text);
  if (!m) return null;
  const bytes = m.slice(1).map(Number);
  return bytes.every((b) => b <= 255) ? Uint8Array.from(bytes) : null;
}

/** Parses an IPv6 address (no brackets, no zone; `::` and a dotted-quad tail allowed) to 16 bytes. */
export function parseIpv6(text: string): Uint8Array | null {
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const groups = (part: string): number[] | null => {
    if (part === '') return [];
    const out: number[] = [];
    const pieces = part.split(':');
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!;
      if (i === pieces.length - 1 && piece.includes('.')) {
        const v4 = parseIpv4(piece);
        if (!v4) return null;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(piece)) {
        out.push(parseInt(piece, 16));
      } else {
        return null;
      }
    }
    return out;
  };
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const all = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return bytes;
}

function inPrefix(address: Uint8Array, base: Uint8Array, bits: number): boolean {
  for (let i = 0; i < bits; i++) {
    const byte = i >> 3;
    const mask = 0x80 >> (i & 7);
    if ((address[byte]! & mask) !== (base[byte]! & mask)) return false;
  }
  return true;
}

const v4Ranges = IPV4_RANGES.map(([base, bits, label]) => ({ base: parseIpv4(base)!, bits, label, range: `${base}/${bits}` }));
const v6Ranges = IPV6_RANGES.map(([base, bits, label]) => ({ base: parseIpv6(base)!, bits, label, range: `${base}/${bits}` }));
const v4Carriers = IPV4_CARRIERS.map(([base, bits, offset, label]) => ({ base: parseIpv6(base)!, bits, offset, label, range: `${base}/${bits}` }));
const GLOBAL_UNICAST = parseIpv6('2000::')!;

function judgeIpv4(bytes: Uint8Array): { range: string; label: string } | null {
  return v4Ranges.find((r) => inPrefix(bytes, r.base, r.bits)) ?? null;
}

/** Whether `host` (a `URL.hostname`) is an IP literal rather than a name. */
export function isIpLiteral(host: string): boolean {
  return host.startsWith('[') || parseIpv4(host) !== null;
}

/**
 * The non-public range an IP literal falls in, or null when it is a public unicast address
 * (or not an IP literal at all: names are judged elsewhere).
 */
export function findNonPublicAddress(host: string): NonPublicAddress | null {
  const v4 = parseIpv4(host);
  if (v4) {
    const hit = judgeIpv4(v4);
    return hit && { address: host, ...hit };
  }
  if (!host.startsWith('[') || !host.endsWith(']')) return null;
  const address = host.slice(1, -1);
  const v6 = parseIpv6(address);
  if (!v6) return null;
  for (const carrier of v4Carriers) {
    if (!inPrefix(v6, carrier.base, carrier.bits)) continue;
    const inner = v6.subarray(carrier.offset, carrier.offset + 4);
    const embeds = inner.join('.');
    const hit = judgeIpv4(inner);
    return hit && { address, embeds, range: `${carrier.range} carrying ${embeds} in ${hit.range}`, label: `${carrier.label} ${hit.label}` };
  }
  const hit = v6Ranges.find((r) => inPrefix(v6, r.base, r.bits));
  if (hit) return { address, range: hit.range, label: hit.label };
  // Outside 2000::/3 nothing is allocated for global unicast.
  if (!inPrefix(v6, GLOBAL_UNICAST, 3)) return { address, range: 'outside 2000::/3', label: 'reserved (not global unicast)' };
  return null;
}
