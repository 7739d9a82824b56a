package delivery

// LeastInFlight is leastInFlight, for the tests outside the package.
var LeastInFlight = leastInFlight
