// Our annotations in the schemas: x-code and x-codes name the diagnostic
// code of grpc-config-dns a failure maps to. ajv's strict mode refuses
// keywords it does not know; these have no validation effect.
module.exports = (ajv) => {
  ajv.addKeyword({ keyword: "x-code", schemaType: "string" });
  ajv.addKeyword({ keyword: "x-codes", schemaType: "object" });
  return ajv;
};
