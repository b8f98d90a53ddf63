/** A realistic audit event of about 1 KB: context and a few changes. */
export function sampleEvent(sequence: number): Record<string, unknown> {
  return {
    actionKey: "invoice.updated",
    actionDescription: "Invoice amount and due date changed from the billing dashboard",
    entityType: "invoice",
    entityId: `inv_${100000 + (sequence % 50000)}`,
    actorType: "user",
    actorId: `user_${sequence % 997}`,
    actorDisplay: "Jane Cooper <jane.cooper@example.com>",
    tenantId: `tenant_${sequence % 13}`,
    source: "billing-api",
    occurredAt: new Date().toISOString(),
    context: {
      ip: "203.0.113.42",
      userAgent:
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
      requestId: "req_8f14e45fceea167a5a36dedd4bea2543",
      sessionId: "sess_c9f0f895fb98ab9159f51fd0297e236d",
      geo: { country: "DE", city: "Berlin" },
      feature: "billing.invoices.edit",
    },
    changes: [
      { op: "set", path: "amount", before: 1250.5, after: 1399.99 },
      { op: "set", path: "dueDate", before: "2026-12-01", after: "2026-12-15" },
      {
        op: "set",
        path: "notes",
        before: null,
        after: "Adjusted after customer call (ticket #4521)",
      },
      {
        op: "add",
        path: "lineItems[3]",
        before: null,
        after: { sku: "SUP-PRO", qty: 1, price: 149.49 },
      },
    ],
  };
}
