pub mod jsonlines;
pub mod transfer;
pub mod websocket;
