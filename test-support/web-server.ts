/**
 * A small HTTP server on 127.0.0.1 (a random port) for the egress tests, the acceptance
 * scenario and the demo's own checks: routes answered by handlers, every request it received
 * kept (method, path, headers, body), and every socket ended on close.
 */
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** A request the server received. */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export type Route = (request: IncomingMessage & { body: string }, response: ServerResponse) => void | Promise<void>;

export interface WebServer {
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  readonly requests: SeenRequest[];
  readonly close: () => Promise<void>;
}

/** Starts a server whose routes are looked up by path (without the query); others answer 404. */
export async function startWebServer(routes: Record<string, Route>): Promise<WebServer> {
  const requests: SeenRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const path = (request.url ?? "/").split("?")[0] ?? "/";
      requests.push({ method: request.method ?? "GET", path, headers: request.headers, body });
      const route = routes[path];
      if (route === undefined) {
        response.statusCode = 404;
        response.end("not found");
        return;
      }
      Promise.resolve(route(Object.assign(request, { body }), response)).catch(() => response.destroy());
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, "close");
    },
  };
}

/** A route answering JSON. */
export function json(value: unknown, status = 200): Route {
  return (_request, response) => {
    response.statusCode = status;
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify(value));
  };
}

/** A route that redirects to `location`. */
export function redirect(location: string, status = 302): Route {
  return (_request, response) => {
    response.statusCode = status;
    response.setHeader("location", location);
    response.end();
  };
}
