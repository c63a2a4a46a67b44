"""The ZITADEL API client: credentials, transport, retries and the endpoints this tool calls."""
