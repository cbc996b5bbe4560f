"""The HTTP API's edge: what a request must carry, how its body is read, the resolver's error answers,
and the request and response models of every route. The services behind it never import this package
for their own types."""
