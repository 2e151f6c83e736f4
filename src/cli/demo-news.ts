/**
 * The demo's news site: a feed served over HTTP on 127.0.0.1 (a random port) by the demo
 * itself, so a news agent can fetch it under an egress policy with no network beyond this
 * machine.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const FEED = {
  title: "The Harbour Gazette",
  items: [
    { title: "Harbour bridge reopens after repairs", published: "2026-11-26" },
    { title: "Library extends its winter opening hours", published: "2026-11-25" },
    { title: "Ferry timetable changes from December", published: "2026-11-24" },
  ],
};

/** A running news site: its origin, and how to stop it. */
export interface NewsSite {
  readonly origin: string;
  readonly close: () => Promise<void>;
}

export async function startNewsSite(): Promise<NewsSite> {
  const server = createServer((request, response) => {
    if (request.url !== "/feed.json") {
      response.statusCode = 404;
      response.end("not found");
      return;
    }
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify(FEED));
  });
  server.keepAliveTimeout = 500;
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}
