/**
 * Which IP addresses a program's `fetch` may reach: public unicast only. Everything else is
 * refused unless an allow entry names that exact address: loopback, private,
 * link-local (169.254.169.254, the cloud metadata address, among them), carrier-grade NAT,
 * multicast, unspecified, broadcast, reserved and documentation ranges, and the IPv6 forms that
 * carry an IPv4 address to somewhere else (IPv4-compatible, NAT64, 6to4, Teredo). An IPv4-mapped
 * IPv6 address (`::ffff:127.0.0.1`) is judged by the IPv4 address it maps (Node's `BlockList`
 * does so).
 */
import { BlockList, isIP } from "node:net";

/** Special-purpose ranges (IANA's IPv4 and IPv6 registries), by what they are. */
const RANGES: readonly (readonly [kind: AddressKind, network: string, prefix: number])[] = [
  ["unspecified", "0.0.0.0", 8],
  ["private", "10.0.0.0", 8],
  ["carrier-grade NAT", "100.64.0.0", 10],
  ["loopback", "127.0.0.0", 8],
  ["link-local", "169.254.0.0", 16],
  ["private", "172.16.0.0", 12],
  ["reserved", "192.0.0.0", 24],
  ["documentation", "192.0.2.0", 24],
  ["reserved", "192.88.99.0", 24],
  ["private", "192.168.0.0", 16],
  ["reserved", "198.18.0.0", 15],
  ["documentation", "198.51.100.0", 24],
  ["documentation", "203.0.113.0", 24],
  ["multicast", "224.0.0.0", 4],
  ["reserved", "240.0.0.0", 4],
  ["unspecified", "::", 128],
  ["loopback", "::1", 128],
  ["reserved", "::", 96],
  ["reserved", "64:ff9b::", 96],
  ["reserved", "64:ff9b:1::", 48],
  ["reserved", "100::", 64],
  ["reserved", "2001::", 32],
  ["documentation", "2001:db8::", 32],
  ["reserved", "2002::", 16],
  ["private", "fc00::", 7],
  ["link-local", "fe80::", 10],
  ["reserved", "fec0::", 10],
  ["multicast", "ff00::", 8],
];

/** What an address is, as far as egress is concerned. */
export type AddressKind = "public" | "unspecified" | "private" | "carrier-grade NAT" | "loopback" | "link-local" | "reserved" | "documentation" | "multicast" | "not an IP address";

/** One list per kind, in the order of {@link RANGES}: the first that holds an address names it. */
const LISTS: readonly (readonly [AddressKind, BlockList])[] = (() => {
  const byKind = new Map<AddressKind, BlockList>();
  for (const [kind, network, prefix] of RANGES) {
    let list = byKind.get(kind);
    if (list === undefined) {
      list = new BlockList();
      byKind.set(kind, list);
    }
    list.addSubnet(network, prefix, network.includes(":") ? "ipv6" : "ipv4");
  }
  // Most specific first: `::1` is loopback, `::` unspecified, before the reserved `::/96` around them.
  const order: AddressKind[] = ["loopback", "unspecified", "link-local", "private", "carrier-grade NAT", "multicast", "documentation", "reserved"];
  return order.map((kind) => [kind, byKind.get(kind)!] as const);
})();

/** What `address` (an IP address without brackets) is. */
export function addressKind(address: string): AddressKind {
  const version = isIP(address);
  if (version === 0) return "not an IP address";
  const family = version === 4 ? "ipv4" : "ipv6";
  for (const [kind, list] of LISTS) if (list.check(address, family)) return kind;
  return "public";
}

/** A URL's host as an IP address (brackets taken off an IPv6 literal), or undefined for a name. */
export function hostAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return isIP(bare) === 0 ? undefined : bare;
}
