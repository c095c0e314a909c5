//! [`InProcess`]: a [`Transport`] that serves requests with a [`Service`] in this process
//! (`demo`, `eval`, tests), through the same JSON entry point the daemon uses, so both
//! yield identical envelopes for identical requests.

use super::Service;
use crate::protocol::{CLI_REQUEST_ID, Response};
use crate::transport::{ClientError, Transport};

/// Serves requests by calling a [`Service`] in this process.
#[derive(Debug, Clone)]
pub struct InProcess {
    service: Service,
}

impl InProcess {
    pub fn new(service: Service) -> InProcess {
        InProcess { service }
    }

    pub fn service(&self) -> &Service {
        &self.service
    }
}

impl Transport for InProcess {
    fn exchange_raw(&self, body: &[u8]) -> Result<Response, ClientError> {
        Ok(self.service.handle_json(body, CLI_REQUEST_ID))
    }
}
