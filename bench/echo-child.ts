// The other end of the bare round-trip baseline: answers every message with itself.
process.on("message", (message) => process.send?.(message));
process.on("disconnect", () => process.exit(0));
process.send?.({ ready: true });
