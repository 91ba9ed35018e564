import { createServer, Packet } from 'dns2';

/**
 * A DNS server on loopback (UDP, a free port) answering TXT questions from a table the test sets:
 * a name set to values answers them; a name marked silent gets no answer at all (a resolver
 * timeout); any other name answers NOERROR with no record. Every question is counted.
 */
export interface TestDns {
  /** `127.0.0.1:<port>`, as DNS_RESOLVERS takes it. */
  address: string;
  set(name: string, ...values: (string | string[])[]): void;
  silent(name: string): void;
  clear(): void;
  questions: string[];
  close(): Promise<void>;
}

export async function startDns(): Promise<TestDns> {
  const records = new Map<string, (string | string[])[]>();
  const silent = new Set<string>();
  const questions: string[] = [];
  const server = createServer({
    udp: true,
    handle: (request, send) => {
      const [question] = request.questions;
      const name = question.name.toLowerCase();
      questions.push(name);
      if (silent.has(name)) return;
      const response = Packet.createResponseFromRequest(request);
      if (question.type === Packet.TYPE.TXT)
        for (const data of records.get(name) ?? []) {
          // dns2's encoder takes a plain record; its type names the decoded class.
          const answer = { name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 1, data };
          response.answers.push(answer as unknown as (typeof response.answers)[number]);
        }
      void send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = (addresses.udp as { port: number }).port;
  return {
    address: `127.0.0.1:${port}`,
    set: (name, ...values) => records.set(name.toLowerCase(), values),
    silent: (name) => silent.add(name.toLowerCase()),
    clear: () => {
      records.clear();
      silent.clear();
    },
    questions,
    close: () => server.close(),
  };
}
