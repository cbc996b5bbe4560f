"""The API's routes, one module per group; each ``routes()`` builds a fresh router, so every resolver
(the function's, and a second one for ``winnow serve``'s model lane) has routes of its own. A route reads
the request, asks the composition root for the service and returns the response model: nothing more."""
