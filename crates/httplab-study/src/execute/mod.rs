//! Layer 3, execution: everything that touches the machine. The corpus on
//! disk ([`corpus`]), the servers started, pinned and stopped ([`servers`],
//! [`slots`]; CPU from cgroups, [`cpu`]; /proc samples, [`sampler`]; the
//! study certificate, [`tls`]), each load run and capacity search
//! ([`measure`]), packet loss on loopback ([`packet_loss`]), the idle-connection
//! holder ([`idle`]) and the rounds that
//! fill every cell ([`rounds`], [`cells`]). It reports what it does as
//! typed [`events`] and files every run as a row of the results.

pub mod cells;
pub mod context;
pub mod corpus;
pub mod cpu;
pub mod env;
pub mod events;
pub mod http;
pub mod idle;
pub mod measure;
pub mod options;
pub mod packet_loss;
pub mod peers;
pub mod preflight;
pub mod rounds;
pub mod sampler;
pub mod servers;
pub mod slots;
pub mod tls;
