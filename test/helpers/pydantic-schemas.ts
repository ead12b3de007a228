/**
 * What Pydantic's model_json_schema() gives for Letta's inventory tool's argument model
 * (tests/test_sdk_client.py: InventoryEntryData, its item cut to two fields), as `client.tools.add`
 * sends it: the nested models as `$defs`, referenced by `$ref`.
 */
export const inventoryArgsSchema = {
  $defs: {
    InventoryEntry: {
      properties: {
        timestamp: { title: 'Timestamp', type: 'integer' },
        item: { $ref: '#/$defs/InventoryItem' },
        transaction_id: { title: 'Transaction Id', type: 'string' },
      },
      required: ['timestamp', 'item', 'transaction_id'],
      title: 'InventoryEntry',
      type: 'object',
    },
    InventoryItem: {
      properties: {
        sku: { title: 'Sku', type: 'string' },
        price: { title: 'Price', type: 'number' },
      },
      required: ['sku', 'price'],
      title: 'InventoryItem',
      type: 'object',
    },
  },
  properties: {
    data: { $ref: '#/$defs/InventoryEntry' },
    quantity_change: { title: 'Quantity Change', type: 'integer' },
  },
  required: ['data', 'quantity_change'],
  title: 'InventoryEntryData',
  type: 'object',
};
