import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A webhook receiver on loopback that keeps every JSON notice it gets, with when it came, and answers 200. */
export async function startNoticeReceiver<Notice extends object>() {
  const notices: (Notice & { receivedAt: number })[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      notices.push({ ...(JSON.parse(body) as Notice), receivedAt: Date.now() });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/approvals`,
    notices,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
